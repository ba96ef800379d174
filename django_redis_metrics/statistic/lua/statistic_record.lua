-- Record values into a statistic's slice at every precision (Redis in Action 5.2.2, with a
-- log-scale histogram per slice for quantiles), enforce each precision's retention, remember
-- the statistic's configuration, list it.
-- KEYS[1]          the meta hash: 'n' and 's' the lifetime count and sum of the values,
--                  precision -> samples kept, 'h:<precision>' the head, 'e:<precision>' when
--                  its hash expires, 'x' when the meta hash expires (ms), and 'listed' (see
--                  lib/slice_window.lua)
-- KEYS[2..n+1]     one hash per precision: slice start -> the slice's summary (below)
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          statistic name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4]          how many seconds a slice may start after the Redis clock (later: refused)
-- ARGV[5]          most histogram buckets a slice keeps
-- ARGV[6]          k, the number of values (all in the same slices)
-- ARGV[7..6+2k]    per value: the value (a finite number, as text) and its histogram bucket
--                  (an integer; the caller computes it)
-- ARGV[7+2k]       the time of the values (seconds; later than ARGV[4] past the clock: refused)
-- ARGV[8+2k..]     per precision: precision, slice start
-- A slice is one field, text: 'count,sum,m2,min,max,buckets' followed by ';bucket:count' for
-- each histogram bucket holding values. m2 is the sum of squared deviations from the mean,
-- updated as Welford does (the plain sum of squares loses every digit when values are large
-- and close). Past ARGV[5] buckets, the two lowest are merged (the low quantiles lose their
-- bound, the high ones keep it).
-- Returns 1 while the statistic is not known to be listed in the catalogue, else 0.
local values = tonumber(ARGV[6])
local TIME = 7 + 2 * values
local FIRST = TIME + 1
local samples = tonumber(ARGV[2])
local has_catalogue = tonumber(ARGV[3]) == 1
local ahead = tonumber(ARGV[4])
local max_buckets = tonumber(ARGV[5])
local name = ARGV[1]
local catalogue = has_catalogue and KEYS[#KEYS] or nil

-- The buckets of `rest` with the two lowest merged into one.
local function collapse(rest)
    local found = {}
    for b, n in rest:gmatch(';(%-?%d+):(%d+)') do
        found[#found + 1] = {tonumber(b), tonumber(n)}
    end
    table.sort(found, function(x, y) return x[1] < y[1] end)
    found[2][2] = found[2][2] + found[1][2]
    local parts = {}
    for i = 2, #found do
        parts[#parts + 1] = string.format(';%d:%d', found[i][1], found[i][2])
    end
    return table.concat(parts)
end

-- The slice `blob` (nil: a new slice) with the value `text` (in `bucket`) added; nil if
-- `blob` is no slice. Min and max keep the text they were given (the caller's exact repr), so
-- only sum and m2 are formatted.
local function add_one(blob, text, bucket)
    if not blob then
        return ('1,' .. text .. ',0,' .. text .. ',' .. text .. ',1;' .. bucket .. ':1')
    end
    local value = tonumber(text)
    local c, s, m2, lo, hi, nb, pos = blob:match('^(%d+),([^,]+),([^,]+),([^,]+),([^,]+),(%d+)()')
    if not pos then
        return nil
    end
    c, s, m2 = tonumber(c), tonumber(s), tonumber(m2)
    local mean = s / c
    c = c + 1
    s = s + value
    m2 = m2 + (value - mean) * (value - s / c)
    if value < tonumber(lo) then
        lo = text
    end
    if value > tonumber(hi) then
        hi = text
    end
    local tag = ';' .. bucket .. ':'
    local _, j = blob:find(tag, pos, true)
    local rest
    if j then
        local digits = blob:match('^%d+', j + 1)
        rest = blob:sub(pos, j) .. string.format('%d', tonumber(digits) + 1) .. blob:sub(j + 1 + #digits)
    else
        rest = blob:sub(pos) .. tag .. '1'
        nb = tonumber(nb) + 1
        if nb > max_buckets then
            rest = collapse(rest)
            nb = nb - 1
        end
    end
    return string.format('%d,%.17g,%.17g,', c, s, m2) .. lo .. ',' .. hi .. ',' .. nb .. rest
end

-- The slice `blob` (nil: a new slice) with every value added; nil if `blob` is no slice.
local function add(blob)
    for v = 7, TIME - 1, 2 do
        blob = add_one(blob, ARGV[v], ARGV[v + 1])
        if not blob then
            return nil
        end
    end
    return blob
end

-- Read every slice first: keys of another type fail here (WRONGTYPE), before any write.
local listed = redis.call('HEXISTS', KEYS[1], 'listed') == 1
if not listed and catalogue then
    redis.call('ZSCORE', catalogue, name)
end
--#include lib/clock.lua
--#include lib/slices.lua
--#include lib/slice_window.lua
local last_key = #KEYS - (has_catalogue and 1 or 0)
local slices, fresh = read_slices(FIRST, last_key, add, 'statistic', name)
if not slices then
    return fresh  -- the refusal
end
local window, refusal =
    write_slices(KEYS[1], slices, fresh, samples, ahead, 'statistic', name, ARGV[TIME])
if not window then
    return refusal
end
local changed, expire, meta_expiry = window[1], window[2], window[3]
-- Lifetime totals, apart from the slices (what a Prometheus summary's _count and _sum are).
local total = ARGV[7]  -- one value: its exact text
if values > 1 then
    local sum = 0
    for v = 7, TIME - 1, 2 do
        sum = sum + tonumber(ARGV[v])
    end
    total = string.format('%.17g', sum)
end
redis.call('HINCRBY', KEYS[1], 'n', values)
redis.call('HINCRBYFLOAT', KEYS[1], 's', total)
return finish_write(KEYS[1], changed, expire, meta_expiry, listed, catalogue, name)

-- Record values into a statistic's slice at every precision (Redis in Action 5.2.2, with a
-- log-scale histogram per slice for quantiles), enforce each precision's retention, remember
-- the statistic's configuration, list it.
-- KEYS[1]          the meta hash: 'n' and 's' the lifetime count and sum of the values,
--                  'b<bucket>' the lifetime count of each histogram bucket and 'bn' how many
--                  such fields it holds (see LIFETIME_BUCKETS), precision -> samples kept,
--                  'h:<precision>' the head, 'e:<precision>' when its hash expires, 'x' when
--                  the meta hash expires (ms), and 'listed' (see lib/slice_window.lua)
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

-- `rest` (the ';bucket:count' cells) with `count` added to the cell of `bucket` (a text),
-- or with that cell appended; and whether it was appended.
local function add_to_cell(rest, bucket, count)
    local tag = ';' .. bucket .. ':'
    local _, j = rest:find(tag, 1, true)
    if not j then
        return rest .. tag .. count, true
    end
    local digits = rest:match('^%d+', j + 1)
    return rest:sub(1, j) .. string.format('%d', digits + count) .. rest:sub(j + 1 + #digits), false
end

-- `rest` with its `merges` lowest buckets merged into the next one above them: what merging
-- the two lowest `merges` times gives. One pass keeps the lowest `merges + 1` buckets (few:
-- at most the call's distinct buckets), then their cells are cut out and the merged count
-- added to the one kept, so the rest of the text is copied, never rebuilt cell by cell.
local function collapse(rest, merges)
    local low = {}  -- the lowest merges + 1 buckets seen, ascending, as numbers
    local texts, counts = {}, {}
    local limit = merges + 1
    for b, n in rest:gmatch(';(%-?%d+):(%d+)') do
        local k = tonumber(b)
        if #low < limit or k < low[limit] then
            local i = math.min(#low, limit - 1)
            while i >= 1 and low[i] > k do
                low[i + 1] = low[i]
                i = i - 1
            end
            low[i + 1] = k
            texts[k], counts[k] = b, n
        end
    end
    local carry = 0
    for i = 1, merges do
        local cell = ';' .. texts[low[i]] .. ':' .. counts[low[i]]
        local at = rest:find(cell .. ';', 1, true) or (#rest - #cell + 1)  -- else the last cell
        rest = rest:sub(1, at - 1) .. rest:sub(at + #cell)
        carry = carry + counts[low[i]]
    end
    return (add_to_cell(rest, texts[low[limit]], carry))
end

-- The values, parsed once for every precision: their numbers, the ARGV positions of the least
-- and the greatest (the first of equals, as value-by-value comparisons keep), and their
-- buckets (texts, in the order first seen) with how many values fall in each.
local numbers, least, greatest, tags, tag_counts
if values > 1 then
    numbers, least, greatest, tags, tag_counts = {}, 7, 7, {}, {}
    for v = 7, TIME - 1, 2 do
        local number = tonumber(ARGV[v])
        numbers[#numbers + 1] = number
        if number < numbers[(least - 5) / 2] then
            least = v
        elseif number > numbers[(greatest - 5) / 2] then
            greatest = v
        end
        local tag = ARGV[v + 1]
        local n = tag_counts[tag]
        if n then
            tag_counts[tag] = n + 1
        else
            tag_counts[tag] = 1
            tags[#tags + 1] = tag
        end
    end
end

-- The slice `blob` (nil: a new slice) with several values added; nil if `blob` is no slice.
-- The same slice as adding them one by one (add_one) would give: the same Welford steps in the
-- same order, min and max by the same comparisons, and the same buckets, since merging the two
-- lowest after each new bucket past `max_buckets` leaves the highest ones and everything
-- below them in the lowest kept (the lowest kept only ever rises). Min and max keep the text
-- they were given (the caller's exact repr), so only sum and m2 are formatted. The blob is
-- read once and each bucket of the call spliced in, so the cost grows with the blob's length
-- times the call's distinct buckets (bounded by the caller), plus one pass when buckets merge.
local function add_all(blob)
    local c, s, m2, lo, hi, nb, rest
    if blob then
        local pos
        c, s, m2, lo, hi, nb, pos = blob:match('^(%d+),([^,]+),([^,]+),([^,]+),([^,]+),(%d+)()')
        if not pos then
            return nil
        end
        c, s, m2, nb, rest = tonumber(c), tonumber(s), tonumber(m2), tonumber(nb), blob:sub(pos)
        if numbers[(least - 5) / 2] < tonumber(lo) then
            lo = ARGV[least]
        end
        if numbers[(greatest - 5) / 2] > tonumber(hi) then
            hi = ARGV[greatest]
        end
    else
        c, s, m2, lo, hi, nb, rest = 0, 0, 0, ARGV[least], ARGV[greatest], 0, ''
    end
    local first = 1
    if c == 0 then
        c, s, first = 1, numbers[1], 2
    end
    for i = first, values do
        local value = numbers[i]
        local mean = s / c
        c = c + 1
        s = s + value
        m2 = m2 + (value - mean) * (value - s / c)
    end
    local old_buckets, added = nb, 0
    for _, tag in ipairs(tags) do
        local appended
        rest, appended = add_to_cell(rest, tag, tag_counts[tag])
        if appended then
            added = added + 1
        end
    end
    -- One merge per new bucket that takes the count past the bound, as value by value.
    local merges = math.max(0, math.min(added, old_buckets + added - max_buckets))
    if merges > 0 then
        rest = collapse(rest, merges)
    end
    return string.format('%d,%.17g,%.17g,', c, s, m2) .. lo .. ',' .. hi .. ','
        .. (old_buckets + added - merges) .. rest
end

-- The one value of a `record` (values == 1), parsed once for every precision: its text (the
-- caller's exact repr), its number and its bucket's cell tag.
local one_text, one_value, one_tag
if values == 1 then
    one_text, one_value, one_tag = ARGV[7], tonumber(ARGV[7]), ';' .. ARGV[8] .. ':'
end

-- The slice `blob` (nil: a new slice) with the one value added; nil if `blob` is no slice:
-- every `record`, spliced into the text as it stands. Min and max keep the text they were
-- given (the caller's exact repr), so only sum and m2 are formatted. The new text is made by
-- one concatenation of the header and the two pieces of the old text around the bucket's
-- count (each piece of a slice's text copied once: the text is up to about 1.3 KB).
local function add_one(blob)
    local text = one_text
    if not blob then
        return '1,' .. text .. ',0,' .. text .. ',' .. text .. ',1' .. one_tag .. '1'
    end
    local c, s, m2, lo, hi, nb, pos = blob:match('^(%d+),([^,]+),([^,]+),([^,]+),([^,]+),(%d+)()')
    if not pos then
        return nil
    end
    local value = one_value
    c, s = c + 0, s + 0
    local mean = s / c
    c = c + 1
    s = s + value
    m2 = m2 + (value - mean) * (value - s / c)
    if value < lo + 0 then
        lo = text
    end
    if value > hi + 0 then
        hi = text
    end
    local head = string.format('%d,%.17g,%.17g,', c, s, m2) .. lo .. ',' .. hi .. ','
    local _, j = blob:find(one_tag, pos, true)
    if j then
        local digits = blob:match('^%d+', j + 1)
        return head .. nb .. blob:sub(pos, j) .. string.format('%d', digits + 1)
            .. blob:sub(j + 1 + #digits)
    end
    nb = nb + 1
    if nb > max_buckets then
        return head .. (nb - 1) .. collapse(blob:sub(pos) .. one_tag .. '1', 1)
    end
    return head .. nb .. blob:sub(pos) .. one_tag .. '1'
end

-- The slice `blob` (nil: a new slice) with every value added; nil if `blob` is no slice.
local function add(blob)
    if values == 1 then
        return add_one(blob)
    end
    return add_all(blob)
end

-- Read every slice first: keys of another type fail here (WRONGTYPE), before any write. The
-- meta hash's listing flag and this call's lifetime bucket fields are read by one HMGET.
local bucket_tags = values == 1 and {ARGV[8]} or tags
local flags = {'listed'}
for i, tag in ipairs(bucket_tags) do
    flags[i + 1] = 'b' .. tag
end
flags = redis.call('HMGET', KEYS[1], unpack(flags))
local listed = flags[1] ~= false
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
-- The lifetime histogram, apart from the slices and never trimmed (what a Prometheus
-- histogram's cumulative buckets are): one field per bucket holding values, at most
-- LIFETIME_BUCKETS of them (96 span a factor of 4096 at eight per doubling; 192 a factor of
-- 16 million), so the meta hash stays bounded; a value of a bucket past them is counted in
-- 'n' and 's' only (a Prometheus histogram's +Inf bucket).
local LIFETIME_BUCKETS = 192
local kept  -- how many bucket fields the hash holds: read only when a bucket is new
for i, tag in ipairs(bucket_tags) do
    local count = values == 1 and 1 or tag_counts[tag]
    local field = 'b' .. tag
    if flags[i + 1] then
        redis.call('HINCRBY', KEYS[1], field, count)
    else
        kept = kept or tonumber(redis.call('HGET', KEYS[1], 'bn') or '0')
        if kept < LIFETIME_BUCKETS then
            kept = kept + 1
            redis.call('HINCRBY', KEYS[1], field, count)
            redis.call('HSET', KEYS[1], 'bn', kept)
        end
    end
end
return finish_write(KEYS[1], changed, expire, meta_expiry, listed, catalogue, name)

-- Set a gauge: the value joins the slice holding its time at every precision (the slice keeps
-- its last value by time, its min and its max), and becomes the gauge's latest value unless a
-- value of a later time is already stored; enforce each precision's retention, remember the
-- gauge's configuration, list it.
-- KEYS[1]          the meta hash: 'v' the latest value as 'time,value', precision -> samples
--                  kept, 'h:<precision>', 'e:<precision>', 'x' and 'listed' (see
--                  lib/slice_window.lua)
-- KEYS[2..n+1]     one hash per precision: slice start -> 'time,last,min,max'
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          gauge name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4]          how many seconds a slice may start after the Redis clock (later: refused)
-- ARGV[5]          the value (a finite number, as text)
-- ARGV[6]          the time of the value (seconds)
-- ARGV[7..]        per precision: precision, slice start
-- A later time wins, whatever the order of arrival; of two values of the same time, the one
-- set last. Returns 1 while the gauge is not known to be listed in the catalogue, else 0.
local FIRST = 7
local samples = tonumber(ARGV[2])
local has_catalogue = tonumber(ARGV[3]) == 1
local ahead = tonumber(ARGV[4])
local value = tonumber(ARGV[5])
local at = tonumber(ARGV[6])
local name = ARGV[1]
local catalogue = has_catalogue and KEYS[#KEYS] or nil

-- The slice `blob` (nil: a new slice) with the value set; nil if `blob` is no slice. Numbers keep
-- the text they were given (the caller's exact repr): nothing is formatted.
local function add(blob)
    if not blob then
        return ARGV[6] .. ',' .. ARGV[5] .. ',' .. ARGV[5] .. ',' .. ARGV[5]
    end
    local t, last, lo, hi = blob:match('^([^,]+),([^,]+),([^,]+),([^,]+)$')
    if not hi then
        return nil
    end
    if at >= tonumber(t) then
        t, last = ARGV[6], ARGV[5]
    end
    if value < tonumber(lo) then
        lo = ARGV[5]
    end
    if value > tonumber(hi) then
        hi = ARGV[5]
    end
    return t .. ',' .. last .. ',' .. lo .. ',' .. hi
end

-- Read everything first: keys of another type fail here (WRONGTYPE), before any write.
local latest = redis.call('HMGET', KEYS[1], 'listed', 'v')
local listed = latest[1] ~= false
if not listed and catalogue then
    redis.call('ZSCORE', catalogue, name)
end
--#include lib/clock.lua
--#include lib/slices.lua
--#include lib/slice_window.lua
local last_key = #KEYS - (has_catalogue and 1 or 0)
local slices, fresh = read_slices(FIRST, last_key, add, 'gauge', name)
if not slices then
    return fresh  -- the refusal
end
local window, refusal =
    write_slices(KEYS[1], slices, fresh, samples, ahead, 'gauge', name, ARGV[6])
if not window then
    return refusal
end
local changed, expire, meta_expiry = window[1], window[2], window[3]
local stored = latest[2] and tonumber(latest[2]:match('^([^,]+),'))
if not stored or at >= stored then
    changed[#changed + 1] = 'v'
    changed[#changed + 1] = ARGV[6] .. ',' .. ARGV[5]
end
return finish_write(KEYS[1], changed, expire, meta_expiry, listed, catalogue, name)

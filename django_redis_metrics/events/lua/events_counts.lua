-- Events per window, one ZCOUNT (O(log N)) per window not served from the cache.
-- KEYS[1]          the time index
-- KEYS[2], KEYS[3] the cache of this window size (score = window start, member = start:count)
--                  and the set of cached sizes; only when caching
-- ARGV[1]          window size to cache under, or '' not to cache
-- ARGV[2]          now: only windows ending at or before it are cached (closed windows)
-- ARGV[3]          most window sizes the series caches
-- ARGV[4]          most windows cached per window size
-- ARGV[5]          TTL of the cache keys (ms), refreshed as they are written: derived data,
--                  they go with the series (twice its retention, as its other keys)
-- ARGV[6]          the first window clipped: the lowest timestamp it counts (inclusive), or ''
--                  when it is whole
-- ARGV[7]          the last window clipped: the highest timestamp it counts (inclusive), or ''
--                  when it is whole
-- ARGV[8..]        the window boundaries: n + 1 timestamps for n windows
-- A clipped window holds only part of its events: it is counted exactly, never read from nor
-- written to the cache. Returns the n counts.
local caching = ARGV[1] ~= ''
local now = tonumber(ARGV[2])
local n = #ARGV - 8
local cached = {}
local room = 0
if caching then
    local known = redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1
    if not known and redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[3]) then
        caching = false
    else
        room = tonumber(ARGV[4]) - redis.call('ZCARD', KEYS[2])
        local hits = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[8], ARGV[7 + n])
        for _, member in ipairs(hits) do
            local sep = string.find(member, ':', 1, true)
            cached[string.sub(member, 1, sep - 1)] = tonumber(string.sub(member, sep + 1))
        end
    end
end
local counts = {}
local stored = false
for i = 1, n do
    local start, stop = ARGV[7 + i], ARGV[8 + i]
    local low = i == 1 and ARGV[6] ~= '' and ARGV[6] or nil
    local high = i == n and ARGV[7] ~= '' and ARGV[7] or nil
    local count
    if low or high then
        count = redis.call('ZCOUNT', KEYS[1], low or start, high or ('(' .. stop))
    else
        count = cached[start]
        if count == nil then
            count = redis.call('ZCOUNT', KEYS[1], start, '(' .. stop)
            if caching and room > 0 and tonumber(stop) <= now then
                redis.call('ZADD', KEYS[2], start, start .. ':' .. count)
                room = room - 1
                stored = true
            end
        end
    end
    counts[i] = count
end
if stored then
    redis.call('SADD', KEYS[3], ARGV[1])
    redis.call('PEXPIRE', KEYS[2], ARGV[5])
    redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
return counts

-- Add one item to the HyperLogLog of every configured period of an estimate, index the periods,
-- list the estimate; enforce ESTIMATE_RETENTION as it writes.
-- KEYS[1]          the estimate's meta hash (its periods; the marker the cleaner checks)
-- KEYS[2..n+1]     one HyperLogLog per period
-- KEYS[n+2..2n+1]  one index sorted set per period (period suffix scored by its start)
-- KEYS[2n+2]       the catalogue, when ARGV[3] = 1 (single node only)
-- ARGV[1]          estimate name;  ARGV[2]  n, the number of periods
-- ARGV[3]          1 when the catalogue key is given
-- ARGV[4]          the item (its normalised text)
-- ARGV[5]          the periods as stored in meta (e.g. "day,week,month")
-- ARGV[6]          the time of the write (epoch seconds);  ARGV[7]  how many seconds it may be
--                  ahead of the Redis clock (later: refused, nothing written)
-- ARGV[8..]        per period: suffix, start (epoch seconds), when its key expires (ms: the end
--                  of its retention), the start of the oldest period of its kind kept
-- Retention, at write time: a period whose retention is over by the Redis clock is not written
-- (a backfill older than ESTIMATE_RETENTION is not kept); a period's key gets its expiry when it
-- is first indexed (or found without one), when the index also loses the periods that left
-- retention; the index and the meta hash expire no earlier than their newest period. So an
-- estimate nobody writes any more disappears by itself.
-- Returns 1 while the estimate is not known to be listed (the caller lists it), else 0.
--#include lib/clock.lua
--#include lib/slices.lua
local n = tonumber(ARGV[2])
local has_catalogue = tonumber(ARGV[3])
local now, now_ms = server_clock()
local refusal = ahead_refusal('estimate ' .. ARGV[1], ARGV[6], now, tonumber(ARGV[7]))
if refusal then
    return refusal
end
-- Checks first, so that nothing is written unless everything can be: a key of another type
-- fails a read here (WRONGTYPE), a string that is not a HyperLogLog is refused.
local kept = {}
for i = 1, n do
    local arg = 8 + 4 * (i - 1)
    if tonumber(ARGV[arg + 2]) > now_ms then
        local key, index = KEYS[1 + i], KEYS[1 + n + i]
        local head = redis.call('GETRANGE', key, 0, 3)
        if head ~= '' and head ~= 'HYLL' then
            return redis.error_reply('DRM_REFUSED estimate ' .. ARGV[1] .. ': ' .. key
                .. ' holds a string that is not a HyperLogLog; nothing was written')
        end
        kept[#kept + 1] = {key, index, arg, redis.call('ZSCORE', index, ARGV[arg]) == false}
    end
end
if #kept == 0 then
    return 0  -- every period is past its retention: nothing kept
end
local stored = redis.call('HGET', KEYS[1], 'periods')
local unlisted = redis.call('HEXISTS', KEYS[1], 'listed') == 0
if unlisted and has_catalogue == 1 then
    redis.call('ZSCORE', KEYS[2 * n + 2], ARGV[1])
end

local newest, fresh_any = 0, false
for _, period in ipairs(kept) do
    local key, index, arg, fresh = period[1], period[2], period[3], period[4]
    local expires = tonumber(ARGV[arg + 2])
    redis.call('PFADD', key, ARGV[4])
    if fresh then
        redis.call('ZADD', index, ARGV[arg + 1], ARGV[arg])
    end
    if fresh or redis.call('PTTL', key) == -1 then
        redis.call('PEXPIREAT', key, expires)
    end
    if fresh then
        -- A period first written: periods of its kind past retention go (their keys have
        -- expired by now, unless written under a longer retention), a few at a time.
        local prefix = string.sub(key, 1, #key - #ARGV[arg])
        local old = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. ARGV[arg + 3], 'LIMIT', 0, 64)
        for _, suffix in ipairs(old) do
            redis.call('UNLINK', prefix .. suffix)
            redis.call('ZREM', index, suffix)
        end
        expire_no_earlier(index, expires, now_ms)
        fresh_any = true
    end
    newest = math.max(newest, expires)
end
if stored ~= ARGV[5] then
    redis.call('HSET', KEYS[1], 'periods', ARGV[5])
end
if fresh_any or not stored then
    expire_no_earlier(KEYS[1], newest, now_ms)
end
if unlisted and has_catalogue == 1 then
    redis.call('ZADD', KEYS[2 * n + 2], 0, ARGV[1])
    redis.call('HSET', KEYS[1], 'listed', 1)
    unlisted = false
end
return unlisted and 1 or 0

-- Set one user's bit in every configured period of a bitmap, index the periods, list the bitmap.
-- KEYS[1]          the bitmap's meta hash (its periods; the marker the cleaner checks)
-- KEYS[2..n+1]     one bitmap per period
-- KEYS[n+2..2n+1]  one index sorted set per period (period suffix scored by its start)
-- KEYS[2n+2]       the catalogue, when ARGV[3] = 1 (single node only)
-- KEYS[2n+3..2n+4] the id mapping hash and its sequence, when ARGV[4] = 1 (single node only)
-- ARGV[1]          bitmap name;  ARGV[2]  n, the number of periods
-- ARGV[3]          1 when the catalogue key is given;  ARGV[4]  1 when the id must be mapped
-- ARGV[5]          the bit offset, or the id to map when ARGV[4] = 1
-- ARGV[6]          the periods as stored in meta (e.g. "day,week,month")
-- ARGV[7..]        per period: suffix, start (epoch seconds)
-- Returns {1 while the bitmap is not known to be listed (the caller lists it), the bit offset}.
local n = tonumber(ARGV[2])
local has_catalogue = tonumber(ARGV[3])
local offset = ARGV[5]
if tonumber(ARGV[4]) == 1 then
    local map, seq = KEYS[2 * n + 2 + has_catalogue], KEYS[2 * n + 3 + has_catalogue]
    offset = redis.call('HGET', map, ARGV[5])
    if not offset then
        offset = redis.call('INCR', seq) - 1
        if offset >= 4294967296 then
            return redis.error_reply('ERR the id mapping is full (2^32 ids assigned)')
        end
        redis.call('HSET', map, ARGV[5], offset)
    end
end
local unlisted = redis.call('HEXISTS', KEYS[1], 'listed') == 0
for i = 1, n do
    redis.call('SETBIT', KEYS[1 + i], offset, 1)
    redis.call('ZADD', KEYS[1 + n + i], ARGV[7 + 2 * (i - 1) + 1], ARGV[7 + 2 * (i - 1)])
end
redis.call('HSET', KEYS[1], 'periods', ARGV[6])
if unlisted and has_catalogue == 1 then
    redis.call('ZADD', KEYS[2 * n + 2], 0, ARGV[1])
    redis.call('HSET', KEYS[1], 'listed', 1)
    unlisted = false
end
return {unlisted and 1 or 0, tonumber(offset)}

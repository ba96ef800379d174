-- Set one user's bit in every configured period of a bitmap, index the periods, list the bitmap.
-- KEYS[1]          the bitmap's meta hash (its periods; the marker the cleaner checks)
-- KEYS[2]          the bitmap's generation (see bitmap_query.lua): changed, with a TTL, when a
--                  marked period is already over by the server's clock, so no cached union
--                  that holds that period is used again
-- KEYS[3..n+2]     one bitmap per period
-- KEYS[n+3..2n+2]  one index sorted set per period (period suffix scored by its start)
-- KEYS[2n+3]       the catalogue, when ARGV[3] = 1 (single node only)
-- KEYS[next]       the kind of user ids of the PREFIX, when ARGV[8] is not "" (single node only)
-- KEYS[next 2]     the id mapping hash and its sequence, when ARGV[4] = 1 (single node only)
-- ARGV[1]          bitmap name;  ARGV[2]  n, the number of periods
-- ARGV[3]          1 when the catalogue key is given;  ARGV[4]  1 when the id must be mapped
-- ARGV[5]          the bit offset, or the id to map when ARGV[4] = 1
-- ARGV[6]          the periods as stored in meta (e.g. "day,week,month")
-- ARGV[7]          TTL of the generation key (ms), at least the cache TTL
-- ARGV[8]          the kind of this id, "int" or "mapped", to check against (and record as) the
--                  PREFIX's kind; "" when the caller checked it (Redis Cluster)
-- ARGV[9..]        per period: suffix, start, end (epoch seconds)
-- Returns {1 while the bitmap is not known to be listed (the caller lists it), the bit offset},
-- or {-1, the PREFIX's kind} when this id is of the other kind (nothing written).
--#include lib/new_generation.lua
local n = tonumber(ARGV[2])
local has_catalogue = tonumber(ARGV[3])
local offset = ARGV[5]
local has_kind = 0
if ARGV[8] ~= '' then
    -- Integer ids and mapped ids (offsets 0, 1, ...) would collide: one kind per PREFIX.
    has_kind = 1
    local kind_key = KEYS[2 * n + 3 + has_catalogue]
    local stored = redis.call('GET', kind_key)
    if not stored then
        redis.call('SET', kind_key, ARGV[8])
    elseif stored ~= ARGV[8] then
        return {-1, stored}
    end
end
if tonumber(ARGV[4]) == 1 then
    local base = 2 * n + 3 + has_catalogue + has_kind
    local map, seq = KEYS[base], KEYS[base + 1]
    offset = redis.call('HGET', map, ARGV[5])
    if not offset then
        offset = redis.call('INCR', seq) - 1
        if offset >= 4294967296 then
            return redis.error_reply('DRM_REFUSED the id mapping is full (2^32 ids assigned)')
        end
        redis.call('HSET', map, ARGV[5], offset)
    end
end
local time = redis.call('TIME')
local now = tonumber(time[1]) + tonumber(time[2]) / 1000000
local late = false
local unlisted = redis.call('HEXISTS', KEYS[1], 'listed') == 0
for i = 1, n do
    local arg = 9 + 3 * (i - 1)
    redis.call('SETBIT', KEYS[2 + i], offset, 1)
    redis.call('ZADD', KEYS[2 + n + i], ARGV[arg + 1], ARGV[arg])
    if tonumber(ARGV[arg + 2]) <= now then
        late = true
    end
end
if late then
    new_generation(KEYS[2], time, ARGV[7])
end
redis.call('HSET', KEYS[1], 'periods', ARGV[6])
if unlisted and has_catalogue == 1 then
    redis.call('ZADD', KEYS[2 * n + 3], 0, ARGV[1])
    redis.call('HSET', KEYS[1], 'listed', 1)
    unlisted = false
end
return {unlisted and 1 or 0, tonumber(offset)}

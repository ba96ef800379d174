-- Set one user's bit in every configured period of a bitmap, index the periods, list the bitmap;
-- enforce BITMAP_RETENTION as it writes.
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
-- ARGV[9]          the time of the mark (epoch seconds);  ARGV[10]  how many seconds it may be
--                  ahead of the Redis clock (later: refused, nothing written)
-- ARGV[11..]       per period: suffix, start, end (epoch seconds), when its key expires (ms:
--                  the end of its retention), the start of the oldest period of its kind kept
-- Retention, at write time: a period whose retention is over by the Redis clock is not written
-- (a backfill older than BITMAP_RETENTION is not kept); a period's key gets its expiry when the
-- period is first indexed, when the index also loses the periods that left retention; the
-- index and the meta hash expire no earlier than their newest period. So a bitmap nobody marks
-- any more disappears by itself.
-- Returns {1 while the bitmap is not known to be listed (the caller lists it), the bit offset},
-- or {-1, the PREFIX's kind} when this id is of the other kind (nothing written).
--#include lib/new_generation.lua
--#include lib/clock.lua
--#include lib/slices.lua
local n = tonumber(ARGV[2])
local has_catalogue = tonumber(ARGV[3])
local offset = ARGV[5]
local now, now_ms, time = server_clock()
local refusal = ahead_refusal('bitmap ' .. ARGV[1], ARGV[9], now, tonumber(ARGV[10]))
if refusal then
    return refusal
end
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
local stale, written, meta_expiry = false, false, nil
local unlisted = redis.call('HEXISTS', KEYS[1], 'listed') == 0
for i = 1, n do
    local arg = 10 + 5 * (i - 1)
    local expires = tonumber(ARGV[arg + 4])
    if expires > now_ms then
        local key, index = KEYS[2 + i], KEYS[2 + n + i]
        written = true
        redis.call('SETBIT', key, offset, 1)
        if redis.call('ZADD', index, ARGV[arg + 2], ARGV[arg + 1]) == 1 then
            -- A period first marked: its expiry; periods of its kind past retention go (their
            -- keys have expired by now, unless marked under a longer retention), a few a time.
            redis.call('PEXPIREAT', key, expires)
            local prefix = string.sub(key, 1, #key - #ARGV[arg + 1])
            local old = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. ARGV[arg + 5], 'LIMIT', 0, 64)
            for _, suffix in ipairs(old) do
                if redis.call('UNLINK', prefix .. suffix) == 1 then
                    stale = true  -- a union cached with it is stale
                end
                redis.call('ZREM', index, suffix)
            end
            expire_no_earlier(index, expires, now_ms)
            meta_expiry = math.max(meta_expiry or 0, expires)
        end
        if tonumber(ARGV[arg + 3]) <= now then
            stale = true  -- a mark into a period that is over: cached unions are stale
        end
    end
end
if not written then
    return {0, tonumber(offset)}  -- every period is past its retention: nothing kept
end
if stale then
    new_generation(KEYS[2], time, ARGV[7])
end
redis.call('HSET', KEYS[1], 'periods', ARGV[6])
if meta_expiry then
    expire_no_earlier(KEYS[1], meta_expiry, now_ms)
end
if unlisted and has_catalogue == 1 then
    redis.call('ZADD', KEYS[2 * n + 3], 0, ARGV[1])
    redis.call('HSET', KEYS[1], 'listed', 1)
    unlisted = false
end
return {unlisted and 1 or 0, tonumber(offset)}

-- Set some users' bits in every configured period of a bitmap; index a period, list the bitmap
-- and enforce BITMAP_RETENTION when a period is new.
-- KEYS[1]          the bitmap's meta hash (its periods; the marker the cleaner checks)
-- KEYS[2]          the bitmap's generation (see bitmap_query.lua): changed, with a TTL, when a
--                  marked period is already over by the server's clock, so no cached union
--                  that holds that period is used again
-- KEYS[3..n+2]     one bitmap per period
-- KEYS[n+3..2n+2]  one index sorted set per period (period suffix scored by its start)
-- KEYS[2n+3]       the catalogue, when the catalogue flag is 1 (single node only)
-- KEYS[next]       the kind of user ids of the PREFIX, when a kind is given (single node only)
-- KEYS[next 2]     the id mapping hash and its sequence, when the map flag is 1 (single node)
-- ARGV[1]          "1" when the caller found nothing to check: the bitmap's meta and listing
--                  are confirmed, the id kind is known, no id is to be mapped, and by the
--                  caller's clock no period is near its end and no mark is ahead
-- ARGV[2]          m, the number of offsets;  ARGV[3]  n, the number of periods
-- ARGV[4]          the time of the latest mark (epoch seconds)
-- ARGV[5]          what only the slow path reads, one line each: "catalogue flag, map flag
--                  (then m = 1 and the offset is the id to map), TTL of the generation key (ms),
--                  the kind of these ids ("int", "mapped"; "-" when known: checked before, or on
--                  the cluster), how many seconds a mark may be ahead of the Redis clock (later:
--                  refused, nothing written), the periods as stored in meta"; then per period
--                  "suffix, start, end (epoch seconds), when its key expires (ms: the end of its
--                  retention), the start of the oldest period of its kind kept"
-- ARGV[6]          the bitmap's name;  ARGV[7..m+6]  the bit offsets
-- Fast path: when the caller found nothing to check and every period key exists (so it was
-- indexed and given its expiry when it was made), the marks are one SETBIT (one BITFIELD for
-- many offsets) per period and nothing else.
-- Otherwise, by the Redis clock: a mark more than the allowed seconds ahead is refused; a period
-- whose retention is over is not written (a backfill older than BITMAP_RETENTION is not kept);
-- a period first marked gets its expiry and its index entry, and its index loses the periods
-- that left retention; the index and the meta hash expire no earlier than their newest
-- period. So a bitmap nobody marks any more disappears by itself.
-- Returns 0 from the fast path; else {1 while the bitmap is not known to be listed (the caller
-- lists it), the first bit offset}, {-2, the first bit offset} when every period is past its
-- retention (nothing written), or {-1, the PREFIX's kind} when these ids are of the other kind
-- (nothing written).
local m, n = tonumber(ARGV[2]), tonumber(ARGV[3])
local first, last = 7, m + 6

-- The arguments of BITFIELD setting `offsets` (SET u1 <offset> 1 each), in chunks of 1000 bits.
local function bitfield_args(offsets)
    local chunks, args, k = {}, {}, 0
    for _, offset in ipairs(offsets) do
        args[k + 1], args[k + 2], args[k + 3], args[k + 4] = 'SET', 'u1', offset, '1'
        k = k + 4
        if k == 4000 then
            chunks[#chunks + 1], args, k = args, {}, 0
        end
    end
    if k > 0 then
        chunks[#chunks + 1] = args
    end
    return chunks
end

-- Set `offsets` in `key`: SETBIT for one, else BITFIELD with `chunks` (bitfield_args, made
-- once for every key).
local function set_bits(key, offsets, chunks)
    if #offsets == 1 then
        redis.call('SETBIT', key, offsets[1], 1)
        return
    end
    for _, args in ipairs(chunks) do
        redis.call('BITFIELD', key, unpack(args))
    end
end

if ARGV[1] == '1' and redis.call('EXISTS', unpack(KEYS, 3, n + 2)) == n then
    if m == 1 then
        for i = 3, n + 2 do
            redis.call('SETBIT', KEYS[i], ARGV[first], 1)
        end
    else
        local offsets = {unpack(ARGV, first, last)}
        local chunks = bitfield_args(offsets)
        for i = 3, n + 2 do
            set_bits(KEYS[i], offsets, chunks)
        end
    end
    return 0
end
--#include lib/new_generation.lua
--#include lib/clock.lua
--#include lib/slices.lua
local lines = {}
for line in string.gmatch(ARGV[5], '[^\n]+') do
    lines[#lines + 1] = line
end
local has_catalogue, map_flag, gen_ttl, kind, ahead, stored_periods =
    string.match(lines[1], '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
has_catalogue = tonumber(has_catalogue)
local now, now_ms, time = server_clock()
local refusal = ahead_refusal('bitmap ' .. ARGV[6], ARGV[4], now, tonumber(ahead))
if refusal then
    return refusal
end
local has_kind = 0
if kind ~= '-' then
    -- Integer ids and mapped ids (offsets 0, 1, ...) would collide: one kind per PREFIX.
    has_kind = 1
    local kind_key = KEYS[2 * n + 3 + has_catalogue]
    local stored = redis.call('GET', kind_key)
    if not stored then
        redis.call('SET', kind_key, kind)
    elseif stored ~= kind then
        return {-1, stored}
    end
end
local offsets = {unpack(ARGV, first, last)}
if tonumber(map_flag) == 1 then
    local base = 2 * n + 3 + has_catalogue + has_kind
    local map, seq = KEYS[base], KEYS[base + 1]
    local offset = redis.call('HGET', map, ARGV[first])
    if not offset then
        offset = redis.call('INCR', seq) - 1
        if offset >= 4294967296 then
            return redis.error_reply('DRM_REFUSED the id mapping is full (2^32 ids assigned)')
        end
        redis.call('HSET', map, ARGV[first], offset)
    end
    offsets = {offset}
end
local chunks = #offsets > 1 and bitfield_args(offsets) or {}
local stale, written, meta_expiry = false, false, nil
local unlisted = redis.call('HEXISTS', KEYS[1], 'listed') == 0
for i = 1, n do
    local suffix, start, finish, expires, oldest =
        string.match(lines[1 + i], '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
    expires = tonumber(expires)
    if expires > now_ms then
        local key, index = KEYS[2 + i], KEYS[2 + n + i]
        written = true
        set_bits(key, offsets, chunks)
        if redis.call('ZADD', index, start, suffix) == 1 then
            -- A period first marked: its expiry; periods of its kind past retention go (their
            -- keys have expired by now, unless marked under a longer retention), a few a time.
            redis.call('PEXPIREAT', key, expires)
            local prefix = string.sub(key, 1, #key - #suffix)
            local old = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. oldest, 'LIMIT', 0, 64)
            for _, gone in ipairs(old) do
                if redis.call('UNLINK', prefix .. gone) == 1 then
                    stale = true  -- a union cached with it is stale
                end
                redis.call('ZREM', index, gone)
            end
            expire_no_earlier(index, expires, now_ms)
            meta_expiry = math.max(meta_expiry or 0, expires)
        elseif redis.call('PTTL', key) == -1 then
            -- Indexed, but made again without its expiry (evicted or deleted, then marked).
            redis.call('PEXPIREAT', key, expires)
        end
        if tonumber(finish) <= now then
            stale = true  -- a mark into a period that is over: cached unions are stale
        end
    end
end
if not written then
    return {-2, tonumber(offsets[1])}  -- every period is past its retention: nothing kept
end
if stale then
    new_generation(KEYS[2], time, gen_ttl)
end
redis.call('HSET', KEYS[1], 'periods', stored_periods)
if meta_expiry then
    expire_no_earlier(KEYS[1], meta_expiry, now_ms)
end
if unlisted and has_catalogue == 1 then
    redis.call('ZADD', KEYS[2 * n + 3], 0, ARGV[6])
    redis.call('HSET', KEYS[1], 'listed', 1)
    unlisted = false
end
return {unlisted and 1 or 0, tonumber(offsets[1])}

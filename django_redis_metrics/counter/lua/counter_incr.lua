-- Add counts to a counter's precision hashes, enforce each precision's retention, remember the
-- counter's configuration, list it.
-- KEYS[1]          the counter's meta hash: precision -> samples kept, 'h:<precision>' -> the
--                  head of that precision (see lib/slices.lua), 'x' -> its own expiry (ms), and
--                  'listed'
-- KEYS[2..n+1]     one slice hash per precision
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4]          how many seconds a slice may start after the Redis clock (later: refused)
-- ARGV[5..]        per precision: precision, number of pairs, then (slice start, count) pairs
-- Retention, at write time: each hash keeps the newest `samples` slices up to its head. Only a
-- write that creates a field (a new slice: once per slice, not per increment) does the work:
-- a new slice older than that window is removed again, the slices that fell out when the head
-- moved are deleted (known arithmetically, no scan), the hash gets a TTL of its retention and
-- the meta hash one no shorter than any of them. So a hash never holds more than `samples`
-- fields (plus the few a clock up to ARGV[4] s ahead may add), and a counter nobody writes any
-- more disappears by itself.
-- Returns 1 while the counter is not known to be listed in the catalogue (the caller must
-- register it, then set 'listed'), else 0. All or nothing: if an increment fails (it would
-- overflow a slice, or Redis refuses it) or a new slice starts too far ahead of the Redis
-- clock, the increments already made are undone and the error is returned before any slice is
-- deleted.
local FIRST = 5
local has_catalogue = tonumber(ARGV[3])
local samples = tonumber(ARGV[2])
local ahead = tonumber(ARGV[4])

-- Undo every increment sent before ARGV position 'stop' (on the error path only, so the
-- success path keeps no bookkeeping).
local function undo_before(stop)
    local b = FIRST
    for i = 2, #KEYS - has_catalogue do
        local pairs_count = tonumber(ARGV[b + 1])
        b = b + 2
        for _ = 1, pairs_count do
            if b >= stop then
                return
            end
            local count = ARGV[b + 1]
            local negated = count:sub(1, 1) == '-' and count:sub(2) or '-' .. count
            if redis.call('HINCRBY', KEYS[i], ARGV[b], negated) == 0 then
                redis.call('HDEL', KEYS[i], ARGV[b])
            end
            b = b + 2
        end
    end
end

-- Keys of another type fail here, before the first write (WRONGTYPE), not after the slices.
local listed = redis.call('HEXISTS', KEYS[1], 'listed') == 1
if not listed and has_catalogue == 1 then
    redis.call('ZSCORE', KEYS[#KEYS], ARGV[1])
end

-- The increments; `fresh` lists the precisions (their ARGV position) where a field was created.
local fresh, fresh_keys = nil, nil
local a = FIRST
for i = 2, #KEYS - has_catalogue do
    local at, pairs_count = a, tonumber(ARGV[a + 1])
    a = a + 2
    for _ = 1, pairs_count do
        local result = redis.pcall('HINCRBY', KEYS[i], ARGV[a], ARGV[a + 1])
        if type(result) == 'table' and result.err then
            undo_before(a)
            if result.err:sub(1, 4) ~= 'ERR ' then
                return redis.error_reply(result.err)  -- WRONGTYPE, OOM...: keep Redis's own code
            end
            -- This slice only (it would overflow, or holds something else than an integer).
            return redis.error_reply('DRM_REFUSED counter slice ' .. ARGV[a] .. ' refused: ' .. result.err)
        end
        if result == tonumber(ARGV[a + 1]) then
            if not fresh then
                fresh, fresh_keys = {}, {}
            end
            if fresh[#fresh] ~= at then
                fresh[#fresh + 1] = at
                fresh_keys[#fresh] = KEYS[i]
            end
        end
        a = a + 2
    end
end

if fresh then
--#include lib/clock.lua
--#include lib/slices.lua
    local now, now_ms = server_clock()
    local fields = {'x'}
    for j, at in ipairs(fresh) do
        for b = at + 2, at + 2 * tonumber(ARGV[at + 1]), 2 do
            if tonumber(ARGV[b]) > now + ahead then
                undo_before(#ARGV + 1)
                return ahead_refusal('counter ' .. ARGV[1], ARGV[b], now, ahead)
            end
        end
        fields[2 * j] = ARGV[at]
        fields[2 * j + 1] = 'h:' .. ARGV[at]
    end
    local meta = redis.call('HMGET', KEYS[1], unpack(fields))
    local expiry = tonumber(meta[1])
    local meta_expiry = expiry or 0
    local changed = {}
    for j, at in ipairs(fresh) do
        local key, p, last = fresh_keys[j], tonumber(ARGV[at]), at + 2 * tonumber(ARGV[at + 1])
        local old_samples, old_head = tonumber(meta[2 * j]), tonumber(meta[2 * j + 1])
        local newest = tonumber(ARGV[at + 2])
        for b = at + 4, last, 2 do
            newest = math.max(newest, tonumber(ARGV[b]))
        end
        local head = slice_head(old_head, newest, math.floor(now / p) * p)
        local floor = head - samples * p
        local stale = nil
        for b = at + 2, last, 2 do
            if tonumber(ARGV[b]) <= floor then
                stale = stale or {}
                stale[#stale + 1] = ARGV[b]  -- older than the window: not kept
            end
        end
        if stale then
            redis.call('HDEL', key, unpack(stale))
        end
        if old_head and old_samples and (head > old_head or samples < old_samples) then
            drop_slices(key, old_head, old_samples, head, samples, p, ahead)
        end
        local expires = now_ms + (samples + 1) * p * 1000
        redis.call('PEXPIREAT', key, expires)
        meta_expiry = math.max(meta_expiry, expires)
        changed[#changed + 1] = ARGV[at]
        changed[#changed + 1] = samples
        changed[#changed + 1] = fields[2 * j + 1]
        changed[#changed + 1] = string.format('%d', head)
    end
    if meta_expiry ~= expiry then
        changed[#changed + 1] = 'x'
        changed[#changed + 1] = string.format('%d', meta_expiry)
    end
    redis.call('HSET', KEYS[1], unpack(changed))
    if meta_expiry ~= expiry then
        redis.call('PEXPIREAT', KEYS[1], meta_expiry)
    end
end

if listed then
    return 0
end
if has_catalogue == 1 then
    redis.call('ZADD', KEYS[#KEYS], 0, ARGV[1])
    redis.call('HSET', KEYS[1], 'listed', 1)
    return 0
end
return 1

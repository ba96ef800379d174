-- Add counts to a counter's precision hashes, enforce each precision's retention, remember the
-- counter's configuration, list it.
-- KEYS[1]          the counter's meta hash: precision -> samples kept, 'h:<precision>' -> the
--                  head of that precision (see lib/slices.lua), 'e:<precision>' -> when its
--                  hash expires, 'x' -> when the meta hash expires (ms), and 'listed'
-- KEYS[2..n+1]     one slice hash per precision
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4]          how many seconds a slice may start after the Redis clock (later: refused)
-- ARGV[5..]        per precision: precision, number of pairs, then (slice start, count) pairs
-- Retention, at write time: each hash keeps the newest `samples` slices up to its head. An
-- increment of an existing slice is a plain HINCRBY; only a write that creates a slice (once
-- per slice) reads and writes the retention state: a new slice older than the window is
-- removed again; when the head moves on, the slices that fell out are deleted with one HDEL
-- (known arithmetically, no scan), or the hash is rebuilt when all of it fell out; the hash's
-- TTL (twice its retention) is refreshed once half of it has passed, and the meta hash expires
-- no earlier than any hash. So a hash never holds more than `samples` fields (plus the few a
-- clock up to ARGV[4] s ahead may add), and a counter nobody writes any more disappears by
-- itself.
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

-- The increments; `fresh` lists the precisions (their ARGV position) where a slice was created.
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
-- Lists the counter when the catalogue is here; the reply says whether the caller must.
local function listing(changed)
    if not listed and has_catalogue == 1 then
        redis.call('ZADD', KEYS[#KEYS], 0, ARGV[1])
        changed[#changed + 1] = 'listed'
        changed[#changed + 1] = 1
    end
    if #changed > 0 then
        redis.call('HSET', KEYS[1], unpack(changed))
    end
    return (listed or has_catalogue == 1) and 0 or 1
end
if not fresh then
    return listing({})
end

--#include lib/clock.lua
--#include lib/slices.lua
local function failed(reply)
    undo_before(#ARGV + 1)
    return reply
end
local now, now_ms = server_clock()
local fields = {'x'}
for _, at in ipairs(fresh) do
    for b = at + 2, at + 2 * tonumber(ARGV[at + 1]), 2 do
        if tonumber(ARGV[b]) > now + ahead then
            return failed(ahead_refusal('counter ' .. ARGV[1], ARGV[b], now, ahead))
        end
    end
    fields[#fields + 1] = ARGV[at]
    fields[#fields + 1] = 'h:' .. ARGV[at]
    fields[#fields + 1] = 'e:' .. ARGV[at]
end
local meta = redis.call('HMGET', KEYS[1], unpack(fields))
local expiry = tonumber(meta[1])
local meta_expiry = expiry or 0
local changed = {}
for j, at in ipairs(fresh) do
    local key, p = fresh_keys[j], tonumber(ARGV[at])
    local last = at + 2 * tonumber(ARGV[at + 1])
    local old_samples, old_head = tonumber(meta[3 * j - 1]), tonumber(meta[3 * j])
    local key_expiry = tonumber(meta[3 * j + 1])
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
    local rebuilt = false
    if not (old_head and old_samples) then
        changed[#changed + 1] = fields[3 * j]
        changed[#changed + 1] = string.format('%d', head)
    elseif head > old_head or samples < old_samples then
        rebuilt = drop_slices(key, old_head, old_samples, head, samples, p, ahead)
        changed[#changed + 1] = fields[3 * j]
        changed[#changed + 1] = string.format('%d', head)
    end
    if old_samples ~= samples then
        changed[#changed + 1] = ARGV[at]
        changed[#changed + 1] = samples
    end
    local ttl = 2 * (samples + 1) * p * 1000
    if rebuilt or not (old_head and key_expiry) or key_expiry - now_ms < ttl / 2 then
        redis.call('PEXPIREAT', key, now_ms + ttl)
        meta_expiry = math.max(meta_expiry, now_ms + ttl)
        changed[#changed + 1] = fields[3 * j + 1]
        changed[#changed + 1] = string.format('%d', now_ms + ttl)
    end
end
if meta_expiry ~= expiry then
    changed[#changed + 1] = 'x'
    changed[#changed + 1] = string.format('%d', meta_expiry)
end
local reply = listing(changed)
if meta_expiry ~= expiry then
    redis.call('PEXPIREAT', KEYS[1], meta_expiry)
end
return reply

-- Add counts to a counter's precision hashes, enforce each precision's retention, remember the
-- counter's configuration, list it.
-- KEYS[1]          the counter's meta hash: precision -> samples kept, 'h:<precision>' -> the
--                  head of that precision (see lib/slices.lua), and 'listed'
-- KEYS[2..n+1]     one slice hash per precision
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4]          how many seconds a write may be stamped ahead of the Redis clock
-- ARGV[5]          the latest time of this call's increments (epoch seconds)
-- ARGV[6..]        per precision: precision, number of pairs, then (slice start, count) pairs
-- Retention, at write time: each hash keeps the newest `samples` slices up to its head. A slice
-- older than that is not written; when the head moves on, the slices that fell out are deleted
-- (known arithmetically, no scan), so a hash never holds more than `samples` fields plus the
-- few a skewed clock may write ahead. Each hash whose head moved, or that gained a field, gets
-- a TTL of its retention (plus `ahead`), and the meta hash a TTL no shorter than any of them,
-- so a counter nobody writes any more disappears by itself.
-- Returns 1 while the counter is not known to be listed in the catalogue (the caller must
-- register it, then set 'listed'), else 0. All or nothing: if an increment fails (it would
-- overflow a slice, or Redis refuses it), the increments already made are undone and the error
-- is returned before any slice is deleted.
--#include lib/clock.lua
--#include lib/slices.lua
local has_catalogue = tonumber(ARGV[3])
local samples = tonumber(ARGV[2])
local ahead = tonumber(ARGV[4])
local precisions = {}
local fields = {'listed'}
local a = 6
for i = 1, #KEYS - 1 - has_catalogue do
    local n = tonumber(ARGV[a + 1])
    precisions[i] = {key = KEYS[i + 1], name = ARGV[a], p = tonumber(ARGV[a]), first = a + 2, n = n}
    fields[#fields + 1] = ARGV[a]
    fields[#fields + 1] = 'h:' .. ARGV[a]
    a = a + 2 + 2 * n
end

-- Keys of another type fail here, before the first write (WRONGTYPE), not after the slices.
local meta = redis.call('HMGET', KEYS[1], unpack(fields))
local listed = meta[1]
if not listed and has_catalogue == 1 then
    redis.call('ZSCORE', KEYS[#KEYS], ARGV[1])
end
local now, now_ms = server_clock()
local refusal = ahead_refusal('counter ' .. ARGV[1], ARGV[5], now, ahead)
if refusal then
    return refusal
end

-- Where each precision's window now ends (its head) and begins (its floor, excluded).
for i, pr in ipairs(precisions) do
    pr.old_samples, pr.old_head = tonumber(meta[2 * i]), tonumber(meta[2 * i + 1])
    local newest = tonumber(ARGV[pr.first])
    for j = 1, pr.n - 1 do
        newest = math.max(newest, tonumber(ARGV[pr.first + 2 * j]))
    end
    pr.head = slice_head(pr.old_head, newest, math.floor(now / pr.p) * pr.p)
    pr.floor = pr.head - samples * pr.p
end

-- Undo every increment made before ARGV position 'stop' (on the error path only, so the
-- success path keeps no bookkeeping).
local function undo_before(stop)
    for _, pr in ipairs(precisions) do
        for at = pr.first, pr.first + 2 * pr.n - 2, 2 do
            if at >= stop then
                return
            end
            if tonumber(ARGV[at]) > pr.floor then
                local count = ARGV[at + 1]
                local negated = count:sub(1, 1) == '-' and count:sub(2) or '-' .. count
                if redis.call('HINCRBY', pr.key, ARGV[at], negated) == 0 then
                    redis.call('HDEL', pr.key, ARGV[at])
                end
            end
        end
    end
end

for _, pr in ipairs(precisions) do
    pr.written = {}
    for at = pr.first, pr.first + 2 * pr.n - 2, 2 do
        if tonumber(ARGV[at]) > pr.floor then
            pr.written[#pr.written + 1] = ARGV[at]
            local result = redis.pcall('HINCRBY', pr.key, ARGV[at], ARGV[at + 1])
            if type(result) == 'table' and result.err then
                undo_before(at)
                if result.err:sub(1, 4) ~= 'ERR ' then
                    return redis.error_reply(result.err)  -- WRONGTYPE, OOM...: keep Redis's own code
                end
                -- This slice only (it would overflow, or holds something else than an integer).
                return redis.error_reply('DRM_REFUSED counter slice ' .. ARGV[at] .. ' refused: ' .. result.err)
            end
            if result == tonumber(ARGV[at + 1]) then
                pr.created = true  -- a new field, maybe a new hash: it needs its TTL
            end
        end
    end
end

-- Retention: slices that fell out, TTLs, the new heads.
local changed = {}
local meta_expiry = nil
for _, pr in ipairs(precisions) do
    local moved = pr.old_head == nil or pr.head > pr.old_head or pr.old_samples ~= samples
    if pr.old_head and pr.old_samples and (pr.head > pr.old_head or samples < pr.old_samples) then
        drop_slices(pr.key, pr.old_head, pr.old_samples, pr.head, samples, pr.p, ahead, pr.written)
    end
    if moved or pr.created then
        local ttl = ((samples + 1) * pr.p + ahead) * 1000
        redis.call('PEXPIRE', pr.key, ttl)
        meta_expiry = math.max(meta_expiry or 0, now_ms + ttl)
    end
    if moved then
        changed[#changed + 1] = pr.name
        changed[#changed + 1] = samples
        changed[#changed + 1] = 'h:' .. pr.name
        changed[#changed + 1] = string.format('%d', pr.head)
    end
end
if #changed > 0 then
    redis.call('HSET', KEYS[1], unpack(changed))
end
if meta_expiry then
    expire_no_earlier(KEYS[1], meta_expiry)
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

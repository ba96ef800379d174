-- Retention at write time of a write that adds to one slice per precision, each slice being one
-- field of the precision's hash, named by its start (statistics, gauges). The same rules as a
-- counter's (see counter_incr.lua and lib/slices.lua, included before this file): a hash keeps
-- the newest `samples` slices up to its head; only a write that creates a slice reads and
-- writes that state; a new slice older than the window is not written; the slices that fell out
-- are deleted (or the hash rebuilt); the hash's TTL, twice its retention, is refreshed once
-- half of it has passed, and the meta hash expires no earlier than any hash.

-- `fresh`: the precisions whose slice this write creates, each {key, p, start}. Call before
-- writing the slices. Sets `kept` on each entry (false: older than the window, do not write),
-- and returns the meta fields to set and the keys to give a TTL once written, as
-- {changed, expire = {{key, at_ms}...}, meta_expiry (nil: unchanged)}.
local function slice_window(meta_key, fresh, samples, ahead, now, now_ms)
    local fields = {'x'}
    for _, slice in ipairs(fresh) do
        fields[#fields + 1] = slice.p
        fields[#fields + 1] = 'h:' .. slice.p
        fields[#fields + 1] = 'e:' .. slice.p
    end
    local meta = redis.call('HMGET', meta_key, unpack(fields))
    local expiry = tonumber(meta[1])
    local meta_expiry = expiry or 0
    local changed, expire = {}, {}
    for j, slice in ipairs(fresh) do
        local p, key = tonumber(slice.p), slice.key
        local old_samples, old_head = tonumber(meta[3 * j - 1]), tonumber(meta[3 * j])
        local key_expiry = tonumber(meta[3 * j + 1])
        local head = slice_head(old_head, tonumber(slice.start), math.floor(now / p) * p)
        slice.kept = tonumber(slice.start) > head - samples * p
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
            changed[#changed + 1] = slice.p
            changed[#changed + 1] = samples
        end
        local ttl = 2 * (samples + 1) * p * 1000
        if slice.kept and (rebuilt or ttl_due(key, old_head, key_expiry, now_ms, ttl)) then
            expire[#expire + 1] = {key, now_ms + ttl}
            meta_expiry = math.max(meta_expiry, now_ms + ttl)
            changed[#changed + 1] = fields[3 * j + 1]
            changed[#changed + 1] = string.format('%d', now_ms + ttl)
        end
    end
    if meta_expiry ~= expiry then
        changed[#changed + 1] = 'x'
        changed[#changed + 1] = string.format('%d', meta_expiry)
        return changed, expire, meta_expiry
    end
    return changed, expire, nil
end

-- After the slices are written: their TTLs, the meta hash's fields and expiry, and the
-- catalogue (on a single node, `catalogue` being its key). Returns the reply of a write script:
-- 1 while the metric is not known to be listed (the caller must list it), else 0.
local function finish_write(meta_key, changed, expire, meta_expiry, listed, catalogue, name)
    for _, item in ipairs(expire) do
        redis.call('PEXPIREAT', item[1], item[2])
    end
    if not listed and catalogue then
        redis.call('ZADD', catalogue, 0, name)
        changed[#changed + 1] = 'listed'
        changed[#changed + 1] = 1
    end
    if #changed > 0 then
        redis.call('HSET', meta_key, unpack(changed))
    end
    if meta_expiry then
        redis.call('PEXPIREAT', meta_key, meta_expiry)
    end
    return (listed or catalogue) and 0 or 1
end

-- Every precision's slice read and passed through `add(blob or nil)` (the slice with this
-- write's values added, nil if the field holds something else): KEYS[2..last_key] the hashes,
-- ARGV[first..] their (precision, slice start) pairs. Returns the slices ({key, p, start,
-- blob, kept}) and those of them this write creates; or nil and the refusal of a slice that
-- holds something else than a `what` (nothing is written before).
local function read_slices(first, last_key, add, what, name)
    local slices, fresh = {}, {}
    for i = 2, last_key do
        local at = first + 2 * (i - 2)
        local slice = {key = KEYS[i], p = ARGV[at], start = ARGV[at + 1], kept = true}
        local blob = redis.call('HGET', slice.key, slice.start)
        slice.blob = add(blob or nil)
        if not slice.blob then
            return nil, redis.error_reply('DRM_REFUSED ' .. what .. ' ' .. name .. ' slice '
                .. slice.start .. ' holds something else than a ' .. what
                .. '; nothing was written')
        end
        slices[#slices + 1] = slice
        if not blob then
            fresh[#fresh + 1] = slice
        end
    end
    return slices, fresh
end

-- Writes the slices read by read_slices, keeping the retention window when some are new (a
-- write stamped `stamp`, more than `ahead` seconds past the Redis clock, is refused first).
-- Returns {changed, expire, meta_expiry} for finish_write, or nil and the refusal.
local function write_slices(meta_key, slices, fresh, samples, ahead, what, name, stamp)
    local changed, expire, meta_expiry = {}, {}, nil
    if #fresh > 0 then
        local now, now_ms = server_clock()
        local refusal = ahead_refusal(what .. ' ' .. name, stamp, now, ahead)
        if refusal then
            return nil, refusal
        end
        changed, expire, meta_expiry = slice_window(meta_key, fresh, samples, ahead, now, now_ms)
    end
    for _, slice in ipairs(slices) do
        if slice.kept then
            redis.call('HSET', slice.key, slice.start, slice.blob)
        end
    end
    return {changed, expire, meta_expiry}
end

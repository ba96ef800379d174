-- Retention of epoch-aligned slices kept as the fields of one hash per precision, named by their
-- start (a counter's precision hash; any kind of metric stored the same way). A hash keeps the
-- newest `samples` slices up to its head: the newest slice written, never past the slice of the
-- Redis clock, and never moving back. So the fields of a hash always lie in
-- (head - samples * p, head + ahead + p], `ahead` being how far writes may run ahead of the
-- clock (later writes are refused), and which fields fell out is known arithmetically: no scan.

-- The head once slices up to `newest` are written (nil: the hash has none yet).
local function slice_head(head, newest, now_slice)
    local candidate = math.min(newest, now_slice)
    if head == nil or candidate > head then
        return candidate
    end
    return head
end

-- Delete the slices that fell out when the head moved from `old_head` (with `old_samples`
-- kept) to `head` (with `samples` kept): the starts in (old_head - old_samples * p,
-- head - samples * p]. When that covers every field the hash held before this write, the hash
-- is rebuilt from the fields left above that range (this write's): a fresh hash, so its
-- memory really returns (returns true: the caller gives it its TTL). Else HDEL of at most
-- old_samples + ahead / p + 1 fields. `ahead`: how far past `old_head` fields may lie.
-- `suffixes` (optional) names the fields of one slice, start .. suffix, for metrics that keep
-- several fields per slice.
local function drop_slices(key, old_head, old_samples, head, samples, p, ahead, suffixes)
    local lo, hi = old_head - old_samples * p, head - samples * p
    if hi <= lo then
        return false
    end
    if hi >= old_head + ahead + p then
        local all = redis.call('HGETALL', key)
        redis.call('DEL', key)
        local kept = {}
        for i = 1, #all, 2 do
            if tonumber(string.match(all[i], '^-?%d+')) > hi then
                kept[#kept + 1] = all[i]
                kept[#kept + 1] = all[i + 1]
            end
        end
        for i = 1, #kept, 1000 do
            redis.call('HSET', key, unpack(kept, i, math.min(i + 999, #kept)))
        end
        return true
    end
    local fields = {}
    for start = lo + p, hi, p do
        local name = string.format('%d', start)
        if suffixes then
            for _, suffix in ipairs(suffixes) do
                fields[#fields + 1] = name .. suffix
            end
        else
            fields[#fields + 1] = name
        end
        if #fields >= 1000 then
            redis.call('HDEL', key, unpack(fields))
            fields = {}
        end
    end
    if #fields > 0 then
        redis.call('HDEL', key, unpack(fields))
    end
    return false
end

-- Whether a write that opens a slice in `key` sets its TTL (`ttl` ms) again: none recorded yet
-- (`old_head`, `key_expiry`: what the meta hash remembers, nil if nothing), half of the recorded
-- one passed, or none on the hash itself (deleted or evicted meanwhile and made again by this
-- write, whatever the meta hash remembers).
local function ttl_due(key, old_head, key_expiry, now_ms, ttl)
    return not (old_head and key_expiry) or key_expiry - now_ms < ttl / 2
        or redis.call('PTTL', key) < 0
end

-- Make `key` expire no earlier than `at_ms` (Unix time, ms; `now_ms`: the clock): the longest
-- TTL asked for wins, and a key without a TTL gets one. A missing key is left missing. (PTTL,
-- not PEXPIRETIME: the demo's embedded Redis is 6.2.)
local function expire_no_earlier(key, at_ms, now_ms)
    local ttl = redis.call('PTTL', key)
    if ttl == -1 or (ttl >= 0 and now_ms + ttl < at_ms) then
        redis.call('PEXPIREAT', key, at_ms)
    end
end

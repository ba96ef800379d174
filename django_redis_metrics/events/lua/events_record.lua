-- Record events atomically: new ids, the event hashes, the time index, the per-field indexes,
-- the values seen, and invalidation of every cached window that holds a new event; then the
-- series' retention, enforced as it is written.
-- KEYS[1]          the id counter (INCRBY)
-- KEYS[2]          the time index (sorted set: id -> timestamp)
-- KEYS[3]          the meta hash (retention, indexed fields, 'x': when the series' keys
--                  expire, in ms); also the catalogue marker
-- KEYS[4]          the set of cached window sizes
-- KEYS[5..m]       per indexed (field, value): its sorted set, the field's values set, and the
--                  sorted set of the field's overflow value (ARGV[8])
-- KEYS[#KEYS]      the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          prefix of event hash keys (prefix .. id)
-- ARGV[2]          prefix of cache keys (prefix .. window size)
-- ARGV[3]          series name (catalogue member)
-- ARGV[4]          1 when the catalogue key is given, else 0
-- ARGV[5]          retention in seconds, or '' for the EVENT_RETENTION setting
-- ARGV[6]          the series' own cap of distinct values per indexed field, or '' when it
--                  follows the EVENT_MAX_VALUES setting (stored in the meta hash, as retention)
-- ARGV[7]          the cap in effect (a positive integer): a value not seen yet, once the
--                  field's values set holds the cap, is indexed under the overflow value instead
-- ARGV[8]          the overflow value (its sorted set is the third key of each entry)
-- ARGV[9]          the retention in effect, in seconds
-- ARGV[10]         how many seconds an event may be stamped after the Redis clock
-- ARGV[11]         most expired events this call removes
-- ARGV[12]         prefix of values sets (prefix .. field)
-- ARGV[13]         prefix of per-field index keys (prefix .. field .. ':' .. value)
-- ARGV[14]         number of indexed fields, then their names
-- then            ids to reserve beyond the events' (a writer's block for its transactions,
--                  events/fast.py; 0 for none), then number of events, then per event: timestamp, number of fields, (field, value)
--                  pairs, number of index entries, (KEYS position of the sorted set, value) pairs
-- Event hashes and cache keys are derived from data here (the id is made in this script), so
-- they are not in KEYS; they share the series' hash tag, so on Redis Cluster they live in the
-- same slot as KEYS[1] and the script stays on one node.
-- Retention follows the newest event, never past the Redis clock: an event older than the
-- retention before it is not stored (its id is used all the same), and each call removes at
-- most ARGV[11] of the oldest expired events, hashes and index entries together. TTLs are a
-- safety net, so that a series nobody records any more disappears by itself: twice the
-- retention on the series' keys (refreshed once per retention, or as a key is written), three
-- times on an event's hash (so no hash expires while its event is still indexed).
-- The script cannot fail once it has written: phase 1 checks every argument and (with read
-- commands that fail on a wrong type) every key it will write; phase 2 only writes.
-- An id the time index already holds is never given again: a process writing from a block of
-- ids reserved before the series was deleted may have used it (the ids are taken anew).
-- Returns {first new id, 1 while the series is not known to be listed (the caller lists it),
-- the Redis clock (ms), the cached window sizes, and per index entry of the first event '1' if
-- it was indexed under its own value (else '0')}: what the fast path learns from (fast.py).

-- Phase 1: parse and check; nothing is written.
--#include lib/clock.lua
--#include lib/prune.lua
local function fail(message)
    return redis.error_reply('DRM_REFUSED events_record: ' .. message .. '; nothing was written')
end
local has_catalogue = ARGV[4] == '1'
local last_key = has_catalogue and #KEYS - 1 or #KEYS
local cap = tonumber(ARGV[7])
if not cap or cap < 1 or cap ~= math.floor(cap) then
    return fail('bad cap of distinct values')
end
local overflow = ARGV[8]
local retention, ahead, budget = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
if not retention or retention <= 0 or not ahead or not budget then
    return fail('bad retention')
end
local a = 14
local n_index = tonumber(ARGV[a])
if not n_index or n_index < 0 then
    return fail('bad number of indexed fields')
end
local meta = {'retention', ARGV[5], 'max_values', ARGV[6]}
local meta_fields = {'listed', 'x', 'retention', 'max_values'}
for i = 1, n_index do
    local name = 'i:' .. ARGV[a + i]
    meta[#meta + 1] = name
    meta[#meta + 1] = '1'
    meta_fields[#meta_fields + 1] = name
end
a = a + n_index + 1
local reserve = tonumber(ARGV[a])
if not reserve or reserve < 0 or reserve ~= math.floor(reserve) then
    return fail('bad number of ids to reserve')
end
a = a + 1
local n_events = tonumber(ARGV[a])
if not n_events or n_events < 1 then
    return fail('bad number of events')
end
a = a + 1
local now, now_ms = server_clock()
local events = {}
local latest = -math.huge
for e = 1, n_events do
    local ts, n_fields = ARGV[a], tonumber(ARGV[a + 1])
    local t = tonumber(ts)
    if not t or t ~= t or t == math.huge or t == -math.huge then
        return fail('bad timestamp ' .. tostring(ts))
    end
    local refusal = ahead_refusal('event series ' .. ARGV[3], ts, now, ahead)
    if refusal then
        return refusal
    end
    latest = math.max(latest, t)
    if not n_fields or n_fields < 1 or a + 2 + 2 * n_fields > #ARGV then
        return fail('bad number of fields')
    end
    local event = {ts = ts, t = t, first = a + 2, last = a + 1 + 2 * n_fields}
    a = event.last + 1
    local n_entries = tonumber(ARGV[a])
    if not n_entries or n_entries < 0 or a + 2 * n_entries > #ARGV then
        return fail('bad number of index entries')
    end
    event.entries, event.n_entries = a + 1, n_entries
    for j = 1, n_entries do
        local k = tonumber(ARGV[a + 2 * j - 1])
        if not k or k < 5 or k + 2 > last_key then
            return fail('bad index key position')
        end
    end
    a = a + 2 * n_entries + 1
    events[e] = event
end
if a ~= #ARGV + 1 then
    return fail('unexpected arguments')
end
-- Every key written below must hold the right type (these reads fail before any write if not),
-- and the counter must stay an exact integer.
-- The configuration is written only when it changed (most records find it as it is); a
-- series indexing more fields than one HMGET's arguments may hold (Lua's unpack) writes it.
local meta_changed = #meta_fields > 1000
local stored = redis.call('HMGET', KEYS[3], unpack(meta_fields, 1, meta_changed and 2 or nil))
local unlisted = not stored[1]
for i = 2, meta_changed and 0 or #meta, 2 do
    if stored[2 + i / 2] ~= meta[i] then
        meta_changed = true
        break
    end
end
local seq = redis.call('GET', KEYS[1])
if seq and (not string.match(seq, '^%d+$') or tonumber(seq) + n_events + reserve >= 2 ^ 53) then
    return fail('the id counter ' .. KEYS[1] .. ' holds ' .. seq)
end
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
-- Events older than the retention before the newest one (never past the clock) are not kept.
local anchor = math.min(math.max(latest, tonumber(newest[2]) or latest), now)
local cutoff = anchor - retention
-- Where each index entry goes, decided here as the writes below will find the sets: a value
-- already seen is indexed under itself (one SISMEMBER, nothing more to write to its values
-- set); a new one is counted against the cap (SCARD, once per set) and indexed under itself,
-- or under the overflow value once the set holds the cap. Each key written is type-checked.
local sets, checked = {}, {}
local function check(key)
    if not checked[key] then
        redis.call('ZCARD', key)
        checked[key] = true
    end
end
for _, event in ipairs(events) do
    local targets = {}
    for j = 0, event.t >= cutoff and event.n_entries - 1 or -1 do
        local p = event.entries + 2 * j
        local k = tonumber(ARGV[p])
        local value, name = ARGV[p + 1], KEYS[k + 1]
        local set = sets[name]
        if not set then
            set = {seen = {}}
            sets[name] = set
        end
        local member = set.seen[value]
        if member == nil then
            member = redis.call('SISMEMBER', name, value) == 1
            set.seen[value] = member
        end
        local index, add = KEYS[k], nil
        if not member then
            if not set.card then
                set.card = redis.call('SCARD', name)
                set.new = set.card == 0  -- created below: it needs its TTL
            end
            if set.card >= cap then
                index, value = KEYS[k + 2], overflow
            else
                set.card = set.card + 1
                set.seen[value] = true
            end
            add = set
        end
        check(index)
        targets[#targets + 1] = {index, value, name, add}
    end
    event.targets = targets
end
local sizes = cached_sizes(KEYS[4], ARGV[2])
for _, size in ipairs(sizes) do
    local w = size[2]
    if not w or w <= 0 or w ~= math.floor(w) then
        return fail('bad cached window size ' .. size[1])
    end
    redis.call('ZCARD', size[3])
end
if unlisted and has_catalogue then
    redis.call('ZSCORE', KEYS[#KEYS], ARGV[3])
end

-- Phase 2: write (no command below can fail on the keys and arguments checked above).
local series_ttl = math.ceil(2 * retention * 1000)
local hash_ttl = math.ceil(3 * retention * 1000)
local function hset(key, list, first, last)
    for i = first, last, 1000 do
        redis.call('HSET', key, unpack(list, i, math.min(i + 999, last)))
    end
end
if meta_changed then
    hset(KEYS[3], meta, 1, #meta)
end
local first = redis.call('INCRBY', KEYS[1], n_events + reserve) - n_events - reserve + 1
for _ = 1, 1000 do
    local ids = {}
    for i = 1, n_events + reserve do
        ids[i] = first + i - 1
    end
    local held = false
    for i = 1, #ids, 1000 do
        for _, s in ipairs(redis.call('ZMSCORE', KEYS[2], unpack(ids, i, math.min(i + 999, #ids)))) do
            held = held or s ~= false
        end
    end
    if not held then
        break
    end
    first = redis.call('INCRBY', KEYS[1], n_events + reserve) - n_events - reserve + 1
end
for e, event in ipairs(events) do
    if event.t >= cutoff then
        local id = first + e - 1
        local hash = ARGV[1] .. id
        -- Ids are never reused, but a stale hash (left by an older version) must not merge in.
        redis.call('DEL', hash)
        hset(hash, ARGV, event.first, event.last)
        redis.call('PEXPIRE', hash, hash_ttl)
        redis.call('ZADD', KEYS[2], event.ts, id)
        for _, target in ipairs(event.targets) do
            local index, value, name, set = target[1], target[2], target[3], target[4]
            redis.call('ZADD', index, event.ts, id)
            redis.call('PEXPIRE', index, series_ttl)
            if set then
                redis.call('SADD', name, value)
                if set.new then
                    redis.call('PEXPIRE', name, series_ttl)
                    set.new = false
                end
            end
        end
        local t = event.t
        for _, size in ipairs(sizes) do
            local start = window_start(t, size[2])
            redis.call('ZREMRANGEBYSCORE', size[3], start, start)
        end
    end
end
-- The series' own keys: their TTL is refreshed once per retention (or when first written).
local expiry = tonumber(stored[2])
if not expiry or expiry - now_ms < retention * 1000 then
    local keys = {KEYS[1], KEYS[2], KEYS[3], KEYS[4]}
    for i = 1, n_index do
        keys[#keys + 1] = ARGV[12] .. ARGV[14 + i]
    end
    for _, key in ipairs(keys) do
        redis.call('PEXPIRE', key, series_ttl)
    end
    redis.call('HSET', KEYS[3], 'x', string.format('%d', now_ms + series_ttl))
end
-- Retention: a bounded number of the oldest expired events go, hashes and index entries
-- together, and as many old cached windows.
if budget > 0 then
    local bound = string.format('%.17g', cutoff)
    if #redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. bound, 'LIMIT', 0, 1) > 0 then
        local prefixes = {hash = ARGV[1], by = ARGV[13], values = ARGV[12], overflow = overflow}
        prune_events(KEYS[2], bound, budget, prefixes, indexed_fields(KEYS[3]), sizes)
    end
    if #sizes > 0 then
        prune_cached_windows(sizes, KEYS[4], cutoff, budget)
    end
end
if unlisted and has_catalogue then
    redis.call('ZADD', KEYS[#KEYS], 0, ARGV[3])
    redis.call('HSET', KEYS[3], 'listed', 1)
    unlisted = false
end
local own = {}
for j, target in ipairs(events[1].targets) do
    own[j] = target[2] == ARGV[events[1].entries + 2 * j - 1] and '1' or '0'
end
local size_names = {}
for i, size in ipairs(sizes) do
    size_names[i] = size[1]
end
return {first, unlisted and 1 or 0, now_ms, size_names, table.concat(own)}

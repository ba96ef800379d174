-- Record events atomically: new ids, the event hashes, the time index, the per-field indexes,
-- the values seen, and invalidation of every cached window that holds a new event.
-- KEYS[1]          the id counter (INCRBY)
-- KEYS[2]          the time index (sorted set: id -> timestamp)
-- KEYS[3]          the meta hash (retention, indexed fields); also the catalogue marker
-- KEYS[4]          the set of cached window sizes
-- KEYS[5..m]       per indexed (field, value): its sorted set, the field's values set, and the
--                  sorted set of the field's overflow value (ARGV[7])
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
-- ARGV[9]          number of indexed fields, then their names
-- then            number of events, then per event: timestamp, number of fields, (field, value)
--                  pairs, number of index entries, (KEYS position of the sorted set, value) pairs
-- Event hashes and cache keys are derived from data here (the id is made in this script), so
-- they are not in KEYS; they share the series' hash tag, so on Redis Cluster they live in the
-- same slot as KEYS[1] and the script stays on one node.
-- The script cannot fail once it has written: phase 1 checks every argument and (with read
-- commands that fail on a wrong type) every key it will write; phase 2 only writes.
-- Returns {first new id, 1 while the series is not known to be listed (the caller lists it)}.

-- Phase 1: parse and check; nothing is written.
--#include lib/window_start.lua
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
local a = 9
local n_index = tonumber(ARGV[a])
if not n_index or n_index < 0 then
    return fail('bad number of indexed fields')
end
local meta = {'retention', ARGV[5], 'max_values', ARGV[6]}
for i = 1, n_index do
    meta[#meta + 1] = 'i:' .. ARGV[a + i]
    meta[#meta + 1] = '1'
end
a = a + n_index + 1
local n_events = tonumber(ARGV[a])
if not n_events or n_events < 1 then
    return fail('bad number of events')
end
a = a + 1
local events = {}
for e = 1, n_events do
    local ts, n_fields = ARGV[a], tonumber(ARGV[a + 1])
    local t = tonumber(ts)
    if not t or t ~= t or t == math.huge or t == -math.huge then
        return fail('bad timestamp ' .. tostring(ts))
    end
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
local unlisted = redis.call('HEXISTS', KEYS[3], 'listed') == 0
local seq = redis.call('GET', KEYS[1])
if seq and (not string.match(seq, '^%d+$') or tonumber(seq) + n_events >= 2 ^ 53) then
    return fail('the id counter ' .. KEYS[1] .. ' holds ' .. seq)
end
redis.call('ZCARD', KEYS[2])
for k = 5, last_key, 3 do
    redis.call('ZCARD', KEYS[k])
    redis.call('SCARD', KEYS[k + 1])
    redis.call('ZCARD', KEYS[k + 2])
end
local sizes = {}
for _, size in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    local w = tonumber(size)
    if not w or w <= 0 or w ~= math.floor(w) then
        return fail('bad cached window size ' .. size)
    end
    redis.call('ZCARD', ARGV[2] .. size)
    sizes[#sizes + 1] = {size, w}
end
if has_catalogue then
    redis.call('ZSCORE', KEYS[#KEYS], ARGV[3])
end

-- Phase 2: write (no command below can fail on the keys and arguments checked above).
local function hset(key, list, first, last)
    for i = first, last, 1000 do
        redis.call('HSET', key, unpack(list, i, math.min(i + 999, last)))
    end
end
hset(KEYS[3], meta, 1, #meta)
local first = redis.call('INCRBY', KEYS[1], n_events) - n_events + 1
for e, event in ipairs(events) do
    local id = first + e - 1
    local hash = ARGV[1] .. id
    -- Ids are never reused, but a stale hash (left by an older version) must not merge in.
    redis.call('DEL', hash)
    hset(hash, ARGV, event.first, event.last)
    redis.call('ZADD', KEYS[2], event.ts, id)
    for j = 0, event.n_entries - 1 do
        local p = event.entries + 2 * j
        local k = tonumber(ARGV[p])
        local index, value = KEYS[k], ARGV[p + 1]
        -- The cap: a value not seen yet, once the field holds the cap, goes to the overflow.
        if redis.call('SISMEMBER', KEYS[k + 1], value) == 0
            and redis.call('SCARD', KEYS[k + 1]) >= cap then
            index, value = KEYS[k + 2], overflow
        end
        redis.call('ZADD', index, event.ts, id)
        redis.call('SADD', KEYS[k + 1], value)
    end
    local t = event.t
    for _, size in ipairs(sizes) do
        local start = window_start(t, size[2])
        redis.call('ZREMRANGEBYSCORE', ARGV[2] .. size[1], start, start)
    end
end
if unlisted and has_catalogue then
    redis.call('ZADD', KEYS[#KEYS], 0, ARGV[3])
    redis.call('HSET', KEYS[3], 'listed', 1)
    unlisted = false
end
return {first, unlisted and 1 or 0}

-- Record events atomically: new ids, the event hashes, the time index, the per-field indexes,
-- the values seen, and invalidation of every cached window that holds a new event.
-- KEYS[1]          the id counter (INCRBY)
-- KEYS[2]          the time index (sorted set: id -> timestamp)
-- KEYS[3]          the meta hash (retention, indexed fields); also the catalogue marker
-- KEYS[4]          the set of cached window sizes
-- KEYS[5..m]       per indexed (field, value): its sorted set, then the field's values set
-- KEYS[#KEYS]      the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          prefix of event hash keys (prefix .. id)
-- ARGV[2]          prefix of cache keys (prefix .. window size)
-- ARGV[3]          series name (catalogue member)
-- ARGV[4]          1 when the catalogue key is given, else 0
-- ARGV[5]          retention in seconds, or '' for the EVENT_RETENTION setting
-- ARGV[6]          number of indexed fields, then their names
-- then            number of events, then per event: timestamp, number of fields, (field, value)
--                  pairs, number of index entries, (KEYS position of the sorted set, value) pairs
-- Event hashes and cache keys are derived from data here (the id is made in this script), so
-- they are not in KEYS; they share the series' hash tag, so on Redis Cluster they live in the
-- same slot as KEYS[1] and the script stays on one node.
-- Returns {first new id, 1 while the series is not known to be listed (the caller lists it)}.
local has_catalogue = tonumber(ARGV[4])
local unlisted = redis.call('HEXISTS', KEYS[3], 'listed') == 0
local meta = {'retention', ARGV[5]}
local a = 6
local n_index = tonumber(ARGV[a])
for i = 1, n_index do
    meta[#meta + 1] = 'i:' .. ARGV[a + i]
    meta[#meta + 1] = '1'
end
a = a + n_index + 1
redis.call('HSET', KEYS[3], unpack(meta))
local n_events = tonumber(ARGV[a])
a = a + 1
local last = redis.call('INCRBY', KEYS[1], n_events)
local first = last - n_events + 1
local sizes = redis.call('SMEMBERS', KEYS[4])
for e = 0, n_events - 1 do
    local id = first + e
    local ts = ARGV[a]
    local n_fields = tonumber(ARGV[a + 1])
    a = a + 2
    if n_fields > 0 then
        redis.call('HSET', ARGV[1] .. id, unpack(ARGV, a, a + 2 * n_fields - 1))
    end
    a = a + 2 * n_fields
    redis.call('ZADD', KEYS[2], ts, id)
    local n_entries = tonumber(ARGV[a])
    a = a + 1
    for _ = 1, n_entries do
        local k = tonumber(ARGV[a])
        redis.call('ZADD', KEYS[k], ts, id)
        redis.call('SADD', KEYS[k + 1], ARGV[a + 1])
        a = a + 2
    end
    if #sizes > 0 then
        local t = tonumber(ts)
        for _, size in ipairs(sizes) do
            local w = tonumber(size)
            local k = math.floor(t / w)
            -- t / w is rounded; correct k so that k * w <= t < (k + 1) * w holds exactly.
            if k * w > t then
                k = k - 1
            elseif (k + 1) * w <= t then
                k = k + 1
            end
            local start = string.format('%d', k * w)
            redis.call('ZREMRANGEBYSCORE', ARGV[2] .. size, start, start)
        end
    end
end
if unlisted and has_catalogue == 1 then
    redis.call('ZADD', KEYS[#KEYS], 0, ARGV[3])
    redis.call('HSET', KEYS[3], 'listed', 1)
    unlisted = false
end
return {first, unlisted and 1 or 0}

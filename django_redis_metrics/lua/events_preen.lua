-- Remove the oldest events (timestamp before a cutoff) entirely, one bounded batch per call:
-- the event hashes, their time index and per-field index entries, values no longer seen, and
-- every cached window that held a removed event or ends before the cutoff.
-- KEYS[1]          the time index
-- KEYS[2]          the meta hash (its 'i:<field>' entries name the indexed fields)
-- KEYS[3]          the set of cached window sizes
-- ARGV[1]          cutoff: events with a timestamp strictly before it are removed
-- ARGV[2]          most events removed by this call
-- ARGV[3]          prefix of event hash keys (prefix .. id)
-- ARGV[4]          prefix of per-field index keys (prefix .. field .. ':' .. value)
-- ARGV[5]          prefix of values sets (prefix .. field)
-- ARGV[6]          prefix of cache keys (prefix .. window size)
-- The keys built from prefixes are derived from stored data, so they are not in KEYS; they all
-- carry the series' hash tag, so on Redis Cluster they are in KEYS[1]'s slot, on this node.
-- Returns the number of events removed.
local cutoff = tonumber(ARGV[1])
local page = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'WITHSCORES',
    'LIMIT', 0, tonumber(ARGV[2]))
local fields = {}
for _, name in ipairs(redis.call('HKEYS', KEYS[2])) do
    if string.sub(name, 1, 2) == 'i:' then
        fields[#fields + 1] = string.sub(name, 3)
    end
end
local newest = nil
local ids = {}
for i = 1, #page, 2 do
    local id = page[i]
    ids[#ids + 1] = id
    newest = tonumber(page[i + 1])
    local hash = ARGV[3] .. id
    for _, field in ipairs(fields) do
        local value = redis.call('HGET', hash, field)
        if value then
            local text = string.sub(value, 3)
            local index = ARGV[4] .. field .. ':' .. text
            redis.call('ZREM', index, id)
            if redis.call('EXISTS', index) == 0 then
                redis.call('SREM', ARGV[5] .. field, text)
            end
        end
    end
    redis.call('DEL', hash)
end
if #ids > 0 then
    redis.call('ZREM', KEYS[1], unpack(ids))
end
for _, size in ipairs(redis.call('SMEMBERS', KEYS[3])) do
    local key = ARGV[6] .. size
    local upto = cutoff - tonumber(size)
    if newest and newest > upto then
        upto = newest
    end
    redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.17g', upto))
    if redis.call('EXISTS', key) == 0 then
        redis.call('SREM', KEYS[3], size)
    end
end
return #ids

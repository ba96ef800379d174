-- Remove the oldest events (timestamp before a cutoff) entirely, one bounded batch per call:
-- the event hashes, their time index and per-field index entries, values no longer seen, and
-- the cached windows that held a removed event; then a bounded number of cached windows lying
-- wholly before the cutoff. Optionally (delete) drops the whole series once it holds no event.
-- KEYS[1]          the time index
-- KEYS[2]          the meta hash (its 'i:<field>' entries name the indexed fields)
-- KEYS[3]          the set of cached window sizes
-- KEYS[4]          the id counter (only deleted when dropping)
-- ARGV[1]          cutoff: events with a timestamp strictly before it are removed
-- ARGV[2]          most events removed by this call
-- ARGV[3]          prefix of event hash keys (prefix .. id)
-- ARGV[4]          prefix of per-field index keys (prefix .. field .. ':' .. value)
-- ARGV[5]          prefix of values sets (prefix .. field)
-- ARGV[6]          prefix of cache keys (prefix .. window size)
-- ARGV[7]          most old cached windows removed by this call
-- ARGV[8]          '1' to drop every key of the series if its time index is then empty
-- ARGV[9]          the overflow value: an event whose value was not admitted under the cap of
--                  distinct values is indexed under it (see events_record.lua)
-- The keys built from prefixes are derived from stored data, so they are not in KEYS; they all
-- carry the series' hash tag, so on Redis Cluster they are in KEYS[1]'s slot, on this node.
-- Returns {events removed, 1 if old cached windows remain, 1 if the series was dropped}.
--#include lib/window_start.lua
local cutoff = tonumber(ARGV[1])
local page = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'WITHSCORES',
    'LIMIT', 0, tonumber(ARGV[2]))
local fields = {}
for _, name in ipairs(redis.call('HKEYS', KEYS[2])) do
    if string.sub(name, 1, 2) == 'i:' then
        fields[#fields + 1] = string.sub(name, 3)
    end
end
local sizes = {}
for _, size in ipairs(redis.call('SMEMBERS', KEYS[3])) do
    sizes[#sizes + 1] = {size, tonumber(size), ARGV[6] .. size}
end
local ids = {}
for i = 1, #page, 2 do
    local id = page[i]
    ids[#ids + 1] = id
    local hash = ARGV[3] .. id
    for _, field in ipairs(fields) do
        local value = redis.call('HGET', hash, field)
        if value then
            local text = string.sub(value, 3)
            local index = ARGV[4] .. field .. ':' .. text
            local removed = redis.call('ZREM', index, id)
            if redis.call('EXISTS', index) == 0 then
                redis.call('SREM', ARGV[5] .. field, text)
            end
            if removed == 0 and text ~= ARGV[9] then
                -- Not admitted under the cap: the event was indexed under the overflow value.
                local overflow = ARGV[4] .. field .. ':' .. ARGV[9]
                if redis.call('ZREM', overflow, id) == 1 and redis.call('EXISTS', overflow) == 0 then
                    redis.call('SREM', ARGV[5] .. field, ARGV[9])
                end
            end
        end
    end
    redis.call('DEL', hash)
    -- The cached window of each size holding this event is stale now: drop it (as record does).
    local t = tonumber(page[i + 1])
    for _, size in ipairs(sizes) do
        local start = window_start(t, size[2])
        if size[4] ~= start then
            redis.call('ZREMRANGEBYSCORE', size[3], start, start)
            size[4] = start
        end
    end
end
for i = 1, #ids, 1000 do
    redis.call('ZREM', KEYS[1], unpack(ids, i, math.min(i + 999, #ids)))
end
if ARGV[8] == '1' and redis.call('ZCARD', KEYS[1]) == 0 then
    -- Nothing left to race with: every event is gone in this same atomic step. UNLINK frees
    -- large keys (a big cache) off the main thread.
    local drop = {KEYS[1], KEYS[2], KEYS[3], KEYS[4]}
    for _, field in ipairs(fields) do
        drop[#drop + 1] = ARGV[5] .. field
    end
    for _, size in ipairs(sizes) do
        drop[#drop + 1] = size[3]
    end
    for i = 1, #drop, 1000 do
        redis.call('UNLINK', unpack(drop, i, math.min(i + 999, #drop)))
    end
    return {#ids, 0, 1}
end
-- Windows wholly before the cutoff hold only expired events: remove them, a bounded number per
-- call (they are the lowest-ranked entries, so ZREMRANGEBYRANK costs O(log N + removed)).
local budget = tonumber(ARGV[7])
local pending = 0
for _, size in ipairs(sizes) do
    local upto = string.format('%.17g', cutoff - size[2])
    local old = redis.call('ZCOUNT', size[3], '-inf', upto)
    if old > budget then
        old = budget
        pending = 1
    end
    if old > 0 then
        redis.call('ZREMRANGEBYRANK', size[3], 0, old - 1)
        budget = budget - old
    end
    if redis.call('EXISTS', size[3]) == 0 then
        redis.call('SREM', KEYS[3], size[1])
    end
end
return {#ids, pending, 0}

-- Retention of an event series, shared by the record script (each record prunes a bounded
-- number of expired events) and the preen script (the cleaner, delete). Keys built from
-- prefixes are derived from stored data; they all carry the series' hash tag, so on Redis
-- Cluster they are in the slot of the script's KEYS.
--#include lib/window_start.lua

-- The indexed fields of a series, as its meta hash names them ('i:<field>'): every field it
-- was ever indexed by, so events recorded under an older index leave no entry behind.
local function indexed_fields(meta_key)
    local fields = {}
    for _, name in ipairs(redis.call('HKEYS', meta_key)) do
        if string.sub(name, 1, 2) == 'i:' then
            fields[#fields + 1] = string.sub(name, 3)
        end
    end
    return fields
end

-- The cached window sizes of a series: {size as stored, size as a number, its cache key}.
local function cached_sizes(sizes_key, cache_prefix)
    local sizes = {}
    for _, size in ipairs(redis.call('SMEMBERS', sizes_key)) do
        sizes[#sizes + 1] = {size, tonumber(size), cache_prefix .. size}
    end
    return sizes
end

-- Remove at most `budget` of the oldest events timestamped strictly before `cutoff` (a score
-- bound string), entirely: the event hashes, their time index and per-field index entries,
-- values no longer seen, and the cached windows that held a removed event. `p` holds the key
-- prefixes (hash, by, values) and `overflow`, the value standing for values beyond the cap of
-- distinct values (see events_record.lua). An event whose hash expired (its TTL, a safety net)
-- leaves the time index all the same. Returns the number of events removed.
local function prune_events(time_key, cutoff, budget, p, fields, sizes)
    local page = redis.call('ZRANGEBYSCORE', time_key, '-inf', '(' .. cutoff, 'WITHSCORES',
        'LIMIT', 0, budget)
    local ids = {}
    for i = 1, #page, 2 do
        local id = page[i]
        ids[#ids + 1] = id
        local hash = p.hash .. id
        for _, field in ipairs(fields) do
            local value = redis.call('HGET', hash, field)
            if value then
                local text = string.sub(value, 3)
                local index = p.by .. field .. ':' .. text
                local removed = redis.call('ZREM', index, id)
                if redis.call('EXISTS', index) == 0 then
                    redis.call('SREM', p.values .. field, text)
                end
                if removed == 0 and text ~= p.overflow then
                    -- Not admitted under the cap: the event was indexed under the overflow value.
                    local other = p.by .. field .. ':' .. p.overflow
                    if redis.call('ZREM', other, id) == 1 and redis.call('EXISTS', other) == 0 then
                        redis.call('SREM', p.values .. field, p.overflow)
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
        redis.call('ZREM', time_key, unpack(ids, i, math.min(i + 999, #ids)))
    end
    return #ids
end

-- Cached windows lying wholly before `cutoff` (a number) hold only expired events: remove at
-- most `budget` of them (the lowest-ranked entries, so ZREMRANGEBYRANK costs O(log N +
-- removed)), and forget a size whose cache is then empty. Returns 1 if old windows remain.
local function prune_cached_windows(sizes, sizes_key, cutoff, budget)
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
            redis.call('SREM', sizes_key, size[1])
        end
    end
    return pending
end

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
--#include lib/prune.lua
local prefixes = {hash = ARGV[3], by = ARGV[4], values = ARGV[5], overflow = ARGV[9]}
local fields = indexed_fields(KEYS[2])
local sizes = cached_sizes(KEYS[3], ARGV[6])
local removed = prune_events(KEYS[1], ARGV[1], tonumber(ARGV[2]), prefixes, fields, sizes)
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
    return {removed, 0, 1}
end
local pending = prune_cached_windows(sizes, KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[7]))
return {removed, pending, 0}

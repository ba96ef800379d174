-- One step of a union too long for one script call: OR a bounded chunk of sources into a
-- temporary key (see bitmaps.MAX_SCRIPT_SOURCES); the query script then reads the result.
-- KEYS[1]          the temporary result (written with a TTL in this step)
-- KEYS[2..4]       when ARGV[3] = 1 (the first step of a cached union): the cache key, its stamp
--                  and the bitmap's generation (see bitmap_query.lua)
-- KEYS[next..]     the sources of this step
-- ARGV[1]          TTL of the temporary result (ms)
-- ARGV[2]          1 when KEYS[1] holds the union of earlier steps (OR into it), else 0
-- ARGV[3]          1 when the cache keys are given
-- Returns {1, generation} when the cached union is valid (nothing built), else
-- {0, generation (or ""), number of sources that exist}.
local ttl, accumulate, cached = ARGV[1], ARGV[2] == '1', ARGV[3] == '1'
local dest, first = KEYS[1], 2
local gen = ''
if cached then
    first = 5
    gen = redis.call('GET', KEYS[4]) or '0'
    if redis.call('EXISTS', KEYS[2]) == 1 and redis.call('GET', KEYS[3]) == gen then
        return {1, gen}
    end
end
local present = {}
for i = first, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        present[#present + 1] = KEYS[i]
    end
end
if #present == 0 then
    return {0, gen, 0}
end
-- BITOP's fast path takes at most 16 existing sources: go in chunks, carrying the result.
local chunk = {}
if accumulate and redis.call('EXISTS', dest) == 1 then
    chunk[1] = dest
end
for _, key in ipairs(present) do
    chunk[#chunk + 1] = key
    if #chunk == 16 then
        redis.call('BITOP', 'OR', dest, unpack(chunk))
        redis.call('PEXPIRE', dest, ttl)
        chunk = {dest}
    end
end
if #chunk > 1 or chunk[1] ~= dest then
    redis.call('BITOP', 'OR', dest, unpack(chunk))
    redis.call('PEXPIRE', dest, ttl)
end
return {0, gen, #present}

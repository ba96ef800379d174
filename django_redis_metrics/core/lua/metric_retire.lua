-- Forget a metric whose every data key is empty, atomically, so no racing write is lost: a
-- writer either lands before (a key is not empty, nothing happens) or after (it re-creates the
-- meta hash and re-lists the metric).
-- KEYS[1]          the metric's meta hash
-- KEYS[2..n+1]     every data key of the metric (a counter's slice hashes, a bitmap's indexes)
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          the metric's name;  ARGV[2]  1 when the catalogue key is given, else 0
-- ARGV[3..]        optional: the meta fields the caller read (a counter's precisions, the
--                  fields named by digits only); if the meta hash now names others, the
--                  caller's KEYS are out of date
-- Returns 1 when retired, 0 when the metric holds data, -1 when its meta fields changed.
local has_catalogue = tonumber(ARGV[2])
if #ARGV > 2 then
    local known = {}
    local count = 0
    for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
        if string.match(field, '^%d+$') then
            known[field] = true
            count = count + 1
        end
    end
    if count ~= #ARGV - 2 then
        return -1
    end
    for i = 3, #ARGV do
        if not known[ARGV[i]] then
            return -1
        end
    end
end
for i = 2, #KEYS - has_catalogue do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        return 0
    end
end
redis.call('DEL', KEYS[1])
if has_catalogue == 1 then
    redis.call('ZREM', KEYS[#KEYS], ARGV[1])
end
return 1

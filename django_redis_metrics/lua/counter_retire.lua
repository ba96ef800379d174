-- Forget a counter whose every slice hash is empty, atomically, so no racing increment is lost.
-- KEYS[1]          the counter's meta hash (precision -> samples, plus 'listed')
-- KEYS[2..n+1]     the slice hash of every precision the caller read from the meta hash
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name;  ARGV[2]  1 when the catalogue key is given, else 0
-- ARGV[3..n+2]     the precisions, in the order of KEYS[2..n+1]
-- Returns 1 when retired, 0 when the counter holds data, -1 when its precisions changed meanwhile.
local has_catalogue = tonumber(ARGV[2])
local known = {}
local count = 0
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if field ~= 'listed' then
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

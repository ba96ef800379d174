-- Forget a bitmap whose every period index is empty, in one step so no racing mark is lost.
-- KEYS[1]          the bitmap's meta hash;  KEYS[2..n+1]  the index of every period
-- KEYS[n+2]        the catalogue, when ARGV[2] = 1 (single node only)
-- ARGV[1]          the bitmap's name;  ARGV[2]  1 when the catalogue key is given
-- Returns 1 when retired, 0 when the bitmap still holds periods.
local has_catalogue = tonumber(ARGV[2])
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

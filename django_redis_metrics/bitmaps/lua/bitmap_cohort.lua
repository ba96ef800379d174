-- One row of a retention table: users of a period, and how many of them came back later.
-- KEYS[1]          the first period's bitmap;  KEYS[2..n]  the later periods' bitmaps
-- KEYS[n+1]        a temporary key (written with a TTL, deleted before returning)
-- ARGV[1]          TTL of the temporary key (ms)
-- Returns {BITCOUNT(KEYS[1]), BITCOUNT(KEYS[1] AND KEYS[2]), ...}.
local temp = KEYS[#KEYS]
local counts = {redis.call('BITCOUNT', KEYS[1])}
for i = 2, #KEYS - 1 do
    if counts[1] == 0 or redis.call('EXISTS', KEYS[i]) == 0 then
        counts[i] = 0
    else
        redis.call('BITOP', 'AND', temp, KEYS[1], KEYS[i])
        redis.call('PEXPIRE', temp, ARGV[1])
        counts[i] = redis.call('BITCOUNT', temp)
    end
end
redis.call('UNLINK', temp)
return counts

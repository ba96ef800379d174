-- Drop expired periods of a bitmap: delete each period's bitmap and its index entry together,
-- and change the bitmap's generation so no cached union holding a dropped period is used again.
-- KEYS[1]          the period's index sorted set;  KEYS[2]  the bitmap's generation
-- KEYS[3..]        the bitmaps to drop
-- ARGV[1]          TTL of the generation key (ms);  ARGV[2..]  the index members (period
--                  suffixes), in the order of KEYS[3..]
-- Returns the number of bitmaps dropped.
--#include lib/new_generation.lua
local dropped = 0
for i = 2, #ARGV do
    dropped = dropped + redis.call('UNLINK', KEYS[i + 1])
    redis.call('ZREM', KEYS[1], ARGV[i])
end
new_generation(KEYS[2], redis.call('TIME'), ARGV[1])
return dropped

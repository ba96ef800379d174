-- Drop expired periods of a bitmap: delete each period's bitmap and its index entry together.
-- KEYS[1]          the period's index sorted set;  KEYS[2..]  the bitmaps to drop
-- ARGV             the index members (period suffixes), in the order of KEYS[2..]
-- Returns the number of bitmaps dropped.
local dropped = 0
for i = 1, #ARGV do
    dropped = dropped + redis.call('UNLINK', KEYS[i + 1])
    redis.call('ZREM', KEYS[1], ARGV[i])
end
return dropped

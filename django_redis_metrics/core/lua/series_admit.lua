-- Admit a series of a labelled metric into its kind's catalogue, unless the metric already
-- holds its max_series series (its __other__ series not counted). Atomic: racing writers of
-- new label sets never admit more than the cap between them.
-- KEYS[1]  the kind's catalogue (a sorted set, every member at score 0)
-- ARGV     the series, the ZRANGEBYLEX bounds of the metric's series, the cap, the __other__ series
-- Returns 1 when the series is (or already was) listed, 0 when the metric is full.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
    return 1
end
local held = redis.call('ZLEXCOUNT', KEYS[1], ARGV[2], ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[5]) then
    held = held - 1
end
if held < tonumber(ARGV[4]) then
    redis.call('ZADD', KEYS[1], 0, ARGV[1])
    return 1
end
return 0

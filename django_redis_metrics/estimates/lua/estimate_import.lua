-- Import HyperLogLogs exported from other slots (estimate_export.lua) and merge them into a
-- temporary one of this slot: the union of a labelled estimate's series (Redis Cluster).
-- KEYS[1]          the union (a temporary key: written with a TTL, merged into by each step)
-- KEYS[2]          a scratch key of this slot (deleted before returning)
-- ARGV[1]          TTL of both (ms);  ARGV[2..]  HyperLogLog strings
-- Returns the number of HyperLogLogs imported.
local union, scratch, ttl = KEYS[1], KEYS[2], ARGV[1]
for i = 2, #ARGV do
    redis.call('SET', scratch, ARGV[i], 'PX', ttl)
    redis.call('PFMERGE', union, scratch)
    redis.call('PEXPIRE', union, ttl)
end
redis.call('UNLINK', scratch)
return #ARGV - 1

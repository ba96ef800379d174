-- Import HyperLogLogs exported from other slots (estimate_export.lua) and merge them into a
-- temporary one of this slot: the union of a labelled estimate's series (Redis Cluster).
-- KEYS[1]          the union (a temporary key: written with a TTL, merged into by each step)
-- KEYS[2]          a scratch key of this slot (deleted before returning)
-- ARGV[1]          TTL of both (ms);  ARGV[2]  1 on the last step
-- ARGV[3..]        HyperLogLog strings
-- The last step returns the count of the union and deletes it; the others return 0.
local union, scratch, ttl = KEYS[1], KEYS[2], ARGV[1]
for i = 3, #ARGV do
    redis.call('SET', scratch, ARGV[i], 'PX', ttl)
    redis.call('PFMERGE', union, scratch)
    redis.call('PEXPIRE', union, ttl)
end
redis.call('UNLINK', scratch)
if ARGV[2] == '1' then
    local count = redis.call('PFCOUNT', union)
    redis.call('UNLINK', union)
    return count
end
return 0

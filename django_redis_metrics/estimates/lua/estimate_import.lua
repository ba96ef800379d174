-- Import HyperLogLogs exported from other slots (estimate_export.lua) and merge them into a
-- temporary one of this slot: the union of a labelled estimate's series (Redis Cluster).
-- KEYS[1]          the union (a temporary key: made dense, written with a TTL, merged into)
-- KEYS[2..n+1]     scratch keys of this slot, one per HyperLogLog imported (deleted here)
-- ARGV[1]          TTL of all of them (ms);  ARGV[2]  1 on the last step
-- ARGV[3..n+2]     the HyperLogLog strings
-- The last step returns the count of the union and deletes it; the others return 0.
--#include lib/dense.lua
local union, ttl = KEYS[1], ARGV[1]
dense_empty(union, ttl)
local scratch = {}
for i = 3, #ARGV do
    scratch[#scratch + 1] = KEYS[i - 1]
    redis.call('SET', KEYS[i - 1], ARGV[i], 'PX', ttl)
end
if #scratch > 0 then
    redis.call('PFMERGE', union, unpack(scratch))
    redis.call('UNLINK', unpack(scratch))
end
redis.call('PEXPIRE', union, ttl)
if ARGV[2] == '1' then
    local count = redis.call('PFCOUNT', union)
    redis.call('UNLINK', union)
    return count
end
return 0

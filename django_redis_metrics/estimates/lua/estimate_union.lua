-- Merge some HyperLogLogs of one estimate into a temporary one, a bounded number per call (a
-- range reading more keys than one PFCOUNT should is counted in steps); the last step counts
-- the union and deletes the temporary key. On a single node the keys may be those of several
-- series of a labelled estimate (no slots there).
-- KEYS[1]          the temporary HyperLogLog (always given a TTL here; made dense first)
-- KEYS[2..]        the HyperLogLogs merged into it by this step
-- ARGV[1]          the temporary key's TTL (ms);  ARGV[2]  1 on the last step
-- Returns the count of the union on the last step, else 0.
--#include lib/dense.lua
dense_empty(KEYS[1], ARGV[1])
redis.call('PFMERGE', unpack(KEYS))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) == 1 then
    local count = redis.call('PFCOUNT', KEYS[1])
    redis.call('UNLINK', KEYS[1])
    return count
end
return 0

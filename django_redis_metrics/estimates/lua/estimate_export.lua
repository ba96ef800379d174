-- One step of exporting an estimate's union of some period keys out of its slot (Redis Cluster:
-- a labelled estimate read as a whole unites its series, each in its own slot).
-- KEYS[1]          a temporary HyperLogLog in this slot (with a TTL, deleted by the last step)
-- KEYS[2..]        the period keys of this step (at most estimates.MAX_COUNT_KEYS)
-- ARGV[1]          TTL of the temporary key (ms);  ARGV[2]  1 on the last step
-- Earlier steps merge their sources into KEYS[1] and return 0. The last step returns the union
-- as a HyperLogLog string (at most about 12 KB), or false if no source existed.
local temp, last = KEYS[1], ARGV[2] == '1'
local present = {}
for i = 2, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        present[#present + 1] = KEYS[i]
    end
end
local accumulated = redis.call('EXISTS', temp) == 1
local result = accumulated and temp or nil
if last and not accumulated and #present == 1 then
    result = present[1]  -- a single existing key: exported as it is
elseif #present > 0 then
    redis.call('PFMERGE', temp, unpack(present))
    redis.call('PEXPIRE', temp, ARGV[1])
    result = temp
end
if not last then
    return 0
end
local answer = false
if result then
    answer = redis.call('GET', result)
end
redis.call('UNLINK', temp)
return answer

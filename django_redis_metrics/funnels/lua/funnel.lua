-- A funnel's counts: the users of step 1, then of step 1 AND step 2, and so on. One script for
-- both of its calls, so that a server that has not seen it answers NOSCRIPT to every call of a
-- pipeline and they are all sent again, in order (the count reads what the unions wrote).
--
-- ARGV[1] = "or": OR the sources into a step's union.
--   KEYS[1]          the union (a temporary key, written with a TTL; ORed into if it exists)
--   KEYS[2..]        the sources (at most MAX_SCRIPT_SOURCES)
--   ARGV[2]          TTL of the union (ms)
--   Returns the number of sources that exist.
-- ARGV[1] = "count": AND the steps cumulatively, counting after each.
--   KEYS[1..n]       each step's bitmap (a period key, or a union built by "or" calls)
--   KEYS[n+1]        a temporary key (written with a TTL, deleted before returning)
--   ARGV[2]          TTL of the temporary key (ms)
--   ARGV[3..n+2]     "1" where KEYS[i] is a union built for this count (deleted before returning)
--   Returns {BITCOUNT(K1), BITCOUNT(K1 AND K2), BITCOUNT(K1 AND K2 AND K3), ...}.
local ttl = ARGV[2]
if ARGV[1] == 'or' then
    local dest = KEYS[1]
    local present = {}
    for i = 2, #KEYS do
        if redis.call('EXISTS', KEYS[i]) == 1 then
            present[#present + 1] = KEYS[i]
        end
    end
    if #present > 0 then
        if redis.call('EXISTS', dest) == 1 then
            present[#present + 1] = dest
        end
        redis.call('BITOP', 'OR', dest, unpack(present))
        redis.call('PEXPIRE', dest, ttl)
    end
    return #present
end
local n = #KEYS - 1
local temp = KEYS[#KEYS]
local counts = {redis.call('BITCOUNT', KEYS[1])}
local current = KEYS[1]
for i = 2, n do
    if counts[i - 1] == 0 or redis.call('EXISTS', KEYS[i]) == 0 then
        counts[i] = 0
    else
        redis.call('BITOP', 'AND', temp, current, KEYS[i])
        redis.call('PEXPIRE', temp, ttl)
        current = temp
        counts[i] = redis.call('BITCOUNT', temp)
    end
end
redis.call('UNLINK', temp)
for i = 1, n do
    if ARGV[i + 2] == '1' then
        redis.call('UNLINK', KEYS[i])
    end
end
return counts

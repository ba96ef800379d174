-- Drop some periods of an estimate: their HyperLogLogs and their index entries, atomically.
-- KEYS[1]          the index sorted set of one period kind
-- KEYS[2..n+1]     the HyperLogLogs of the periods dropped
-- ARGV[1..n]       their suffixes (members of the index)
if #KEYS > 1 then
    redis.call('UNLINK', unpack(KEYS, 2))
end
if #ARGV > 0 then
    redis.call('ZREM', KEYS[1], unpack(ARGV))
end
return #ARGV

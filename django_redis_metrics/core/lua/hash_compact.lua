-- Rewrite a hash that shrank into a fresh one, so that Redis stores it in its compact listpack
-- encoding again: Redis never converts a hash back by itself, so a hash trimmed from 86,400
-- fields to 120 keeps about 1.2 MB where a fresh one takes under 2 KB. Bounded: only a hash
-- small enough to be compact is read and rewritten.
-- KEYS[1]          the hash
-- ARGV[1]          most fields of a compact hash (the server's hash-max-listpack-entries)
-- Returns 1 when the hash was rewritten, else 0.
local key = KEYS[1]
if redis.call('OBJECT', 'ENCODING', key) ~= 'hashtable' then
    return 0
end
if redis.call('HLEN', key) > tonumber(ARGV[1]) then
    return 0
end
local ttl = redis.call('PTTL', key)
local fields = redis.call('HGETALL', key)
redis.call('DEL', key)
redis.call('HSET', key, unpack(fields))
if ttl > 0 then
    redis.call('PEXPIRE', key, ttl)
end
return 1

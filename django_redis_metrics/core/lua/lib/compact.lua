-- Rewrite a hash that shrank into a fresh one, so that Redis stores it in its compact listpack
-- encoding again: Redis never converts a hash back by itself, so a hash trimmed from 86,400
-- fields to 120 keeps about 1.2 MB where a fresh one takes under 2 KB. Bounded: only a hash of
-- at most `entries` fields (the server's hash-max-listpack-entries) is read and rewritten; its
-- TTL is kept. Returns true when the hash was rewritten.
local function compact_hash(key, entries)
    if redis.call('OBJECT', 'ENCODING', key) ~= 'hashtable' then
        return false
    end
    if redis.call('HLEN', key) > entries then
        return false
    end
    local ttl = redis.call('PTTL', key)
    local fields = redis.call('HGETALL', key)
    redis.call('DEL', key)
    redis.call('HSET', key, unpack(fields))
    if ttl > 0 then
        redis.call('PEXPIRE', key, ttl)
    end
    return true
end

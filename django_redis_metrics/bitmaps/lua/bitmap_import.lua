-- Import bitmaps exported from other slots (bitmap_export.lua) and OR them into a temporary key
-- of this slot: the union of a labelled bitmap's series, built in its own slot (Redis Cluster).
-- KEYS[1]          the union (a temporary key: written with a TTL, ORed into by each step)
-- KEYS[2]          a scratch key of this slot (deleted before returning)
-- ARGV[1]          TTL of both (ms)
-- ARGV[2..]        pairs: "dump" and a DUMP payload, or "raw" and a bitmap's bytes
-- Returns the number of bitmaps imported.
local union, scratch, ttl = KEYS[1], KEYS[2], ARGV[1]
local imported = 0
for i = 2, #ARGV - 1, 2 do
    if ARGV[i] == 'dump' then
        redis.call('RESTORE', scratch, ttl, ARGV[i + 1], 'REPLACE')
    else
        redis.call('SET', scratch, ARGV[i + 1], 'PX', ttl)
    end
    if redis.call('EXISTS', union) == 1 then
        redis.call('BITOP', 'OR', union, union, scratch)
        redis.call('PEXPIRE', union, ttl)
    else
        redis.call('RENAME', scratch, union)
        redis.call('PEXPIRE', union, ttl)
    end
    imported = imported + 1
end
redis.call('UNLINK', scratch)
return imported

-- Store one annotation and enforce the annotations' bounds, in one atomic call: drop those
-- older than the retention (by the Redis clock) and the oldest beyond the count kept, and make
-- both keys expire when the newest one left falls out of the retention.
-- KEYS[1]   the sorted set: score = time (seconds), member = 12-digit number .. JSON
-- KEYS[2]   the sequence numbering members
-- ARGV[1]   the annotation's time (seconds, as text)
-- ARGV[2]   its JSON ({"text": ..., "tags": [...]})
-- ARGV[3]   most annotations kept (the newest)
-- ARGV[4]   retention in seconds
-- ARGV[5]   how many seconds the time may lie after the Redis clock (later: refused)
-- Returns the member stored.
--#include lib/clock.lua
-- Read first: a key of another type fails here (WRONGTYPE), before any write.
redis.call('ZCARD', KEYS[1])
redis.call('GET', KEYS[2])
local now = server_clock()
local retention = tonumber(ARGV[4])
local refusal = ahead_refusal('annotation', ARGV[1], now, tonumber(ARGV[5]))
if refusal then
    return refusal
end
local at = tonumber(ARGV[1])
if at < now - retention then
    return redis.error_reply(string.format(
        'DRM_REFUSED annotation: time %s is older than the %d s ANNOTATION_RETENTION keeps; '
        .. 'nothing was written', ARGV[1], retention))
end
local member = string.format('%012d', redis.call('INCR', KEYS[2])) .. ARGV[2]
redis.call('ZADD', KEYS[1], ARGV[1], member)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.6f', now - retention))
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if excess > 0 then
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1)
end
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local expire_ms = math.floor((tonumber(newest[2]) + retention) * 1000)
redis.call('PEXPIREAT', KEYS[1], expire_ms)
redis.call('PEXPIREAT', KEYS[2], expire_ms)
return member

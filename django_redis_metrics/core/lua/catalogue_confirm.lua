-- Flag a metric's meta hash as listed, only if it still exists: a cleaner may have retired the
-- metric since its write, and a meta hash holding nothing but the flag would be a ghost.
-- KEYS[1]  the metric's meta hash
if redis.call('EXISTS', KEYS[1]) == 1 then
    redis.call('HSET', KEYS[1], 'listed', 1)
    return 1
end
return 0

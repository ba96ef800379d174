-- The Redis server's clock, the one reference of write-time retention for every writer.
-- Returns seconds (a float), milliseconds (an integer) and TIME's own reply.
local function server_clock()
    local time = redis.call('TIME')
    local seconds = time[1] + 0  -- one string-to-number conversion (tonumber costs two)
    local micros = time[2] + 0
    return seconds + micros / 1000000, seconds * 1000 + math.floor(micros / 1000), time
end

-- The refusal of a write stamped more than `ahead` seconds after the Redis clock (`now`), or
-- nil when `latest` (the write's latest time, a string) is fine. A clock far ahead would move
-- a metric's retention window forward and drop data that is still wanted.
local function ahead_refusal(what, latest, now, ahead)
    local t = tonumber(latest)
    if t and t > now + ahead then
        return redis.error_reply('DRM_REFUSED ' .. string.format(
            '%s: time %s is %.0f s ahead of the Redis server clock (at most %d s allowed: '
            .. 'check the clocks); nothing was written', what, latest, t - now, ahead))
    end
    return nil
end

-- Claim the deliveries of one alert due by now (alerts/delivery.py): each is pushed a lease
-- ahead, so another evaluator does not send it while this one does.
-- KEYS[1] outbox sorted set. ARGV: now, lease (seconds), most to claim.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do
    redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), member)
end
return due

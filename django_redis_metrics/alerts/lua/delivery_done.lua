-- The end of one delivery attempt (alerts/delivery.py), if this evaluator still holds it.
-- KEYS[1] outbox, KEYS[2] state hash. ARGV: the claimed member, its retry ('' when delivered
-- or given up), the retry's due time, 'gave_up' when the attempts are spent ('' otherwise).
-- Returns 1 when applied, 0 when the delivery was no longer there (another evaluator's).
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
    return 0
end
if ARGV[2] ~= '' then
    redis.call('ZADD', KEYS[1], tonumber(ARGV[3]), ARGV[2])
end
if ARGV[4] == 'gave_up' then
    redis.call('HINCRBY', KEYS[2], 'gave_up', 1)
elseif ARGV[2] == '' then
    redis.call('HINCRBY', KEYS[2], 'delivered', 1)
end
return 1

-- One evaluation of one alert, applied atomically (alerts/state.py).
-- KEYS[1] state hash, KEYS[2] history list, KEYS[3] outbox sorted set (webhook deliveries).
-- ARGV: now, breached (1/0), hold (the for_ seconds), value ('' for none), history size,
--       outbox size, deliver (1/0), ttl (ms), alert name, threshold text.
-- Returns {previous state, new state}; {'stale', state} for an evaluation older than the
-- last one applied (a slow evaluator must not undo a newer one's decision).
local now = tonumber(ARGV[1])
local breached = ARGV[2] == '1'
local hold = tonumber(ARGV[3])
local state = redis.call('HGET', KEYS[1], 'state') or 'normal'
local last = tonumber(redis.call('HGET', KEYS[1], 'at') or '-1')
if now < last then
    return {'stale', state}
end
local since = tonumber(redis.call('HGET', KEYS[1], 'since') or ARGV[1])
local new = state
if breached then
    if state == 'normal' or state == 'resolved' then
        if hold <= 0 then new = 'firing' else new = 'pending' end
    elseif state == 'pending' and now - since >= hold then
        new = 'firing'
    end
else
    if state == 'pending' or state == 'resolved' then
        new = 'normal'
    elseif state == 'firing' then
        new = 'resolved'
    end
end
redis.call('HSET', KEYS[1], 'at', ARGV[1], 'value', ARGV[4])
redis.call('HSETNX', KEYS[1], 'since', ARGV[1])  -- normal since its first evaluation
if new ~= state then
    redis.call('HSET', KEYS[1], 'state', new, 'since', ARGV[1])
    local entry = cjson.encode({from = state, to = new, at = now, value = ARGV[4]})
    redis.call('LPUSH', KEYS[2], entry)
    redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[5]) - 1)
    redis.call('PEXPIRE', KEYS[2], ARGV[8])
    local notify = new == 'firing' or (new == 'resolved' and state == 'firing')
    if notify and ARGV[7] == '1' then
        local id = redis.call('HINCRBY', KEYS[1], 'seq', 1)
        local delivery = cjson.encode({
            id = id, attempt = 0, alert = ARGV[9], state = new, previous = state,
            at = now, value = ARGV[4], threshold = ARGV[10]})
        redis.call('ZADD', KEYS[3], now, delivery)
        local excess = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[6])
        if excess > 0 then
            redis.call('ZREMRANGEBYRANK', KEYS[3], 0, excess - 1)
            redis.call('HINCRBY', KEYS[1], 'dropped', excess)
        end
        redis.call('PEXPIRE', KEYS[3], ARGV[8])
    end
end
redis.call('PEXPIRE', KEYS[1], ARGV[8])
return {state, new}

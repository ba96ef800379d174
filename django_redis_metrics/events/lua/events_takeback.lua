-- Take back what one transaction of the fast path (events/fast.py) wrote, when its replies
-- show it should not stand (a key missing or of another type, a value not in its set, the id
-- counter reset, a cached window size it did not know, an id already taken): the record then
-- goes by events_record.lua, as if the transaction had never run. Only what the transaction
-- itself wrote is removed (its replies say which): no other writer can have written the same
-- id since (the record script skips ids the time index holds; a transaction does not write a
-- hash that exists), so nothing of anyone else's is touched.
-- KEYS[1]          the time index
-- KEYS[2]          the event's hash
-- KEYS[3..]        per index entry: its sorted set, then its field's values set
-- ARGV[1]          the event's id
-- ARGV[2]          '1' if the transaction made the event's hash
-- ARGV[3]          '1' if it added the id to the time index
-- ARGV[4..]        per index entry: '1' if it added the id to the entry's sorted set, '1' if
--                  its SADD to the values set ran, the value
-- A value whose sorted set is empty afterwards leaves its values set, as pruning has it.
-- Returns 1.
if ARGV[2] == '1' then
    redis.call('DEL', KEYS[2])
end
if ARGV[3] == '1' then
    redis.call('ZREM', KEYS[1], ARGV[1])
end
for k = 3, #KEYS, 2 do
    local a = 4 + 3 * (k - 3) / 2
    if ARGV[a] == '1' then
        redis.call('ZREM', KEYS[k], ARGV[1])
        if ARGV[a + 1] == '1' and redis.call('EXISTS', KEYS[k]) == 0 then
            redis.call('SREM', KEYS[k + 1], ARGV[a + 2])
        end
    end
end
return 1

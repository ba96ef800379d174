-- One page of events in time order, from a cursor: ids, timestamps and the event hashes.
-- KEYS[1]          the time index
-- ARGV[1]          1 for oldest first, 0 for newest first
-- ARGV[2], ARGV[3] lowest and highest timestamp (inclusive)
-- ARGV[4], ARGV[5] cursor: the last id returned and its timestamp, or '' to start
-- ARGV[6]          page size
-- ARGV[7]          prefix of event hash keys (in the series' hash tag, so in KEYS[1]'s slot)
-- Returns {done, {id, timestamp, field, value, ...}, ...}.
local key = KEYS[1]
local asc = ARGV[1] == '1'
local lo, hi = tonumber(ARGV[2]), tonumber(ARGV[3])
local count = tonumber(ARGV[6])
local rank
if ARGV[4] == '' then
    if asc then
        rank = redis.call('ZCOUNT', key, '-inf', '(' .. ARGV[2])
    else
        rank = redis.call('ZCOUNT', key, '(' .. ARGV[3], '+inf')
    end
else
    rank = asc and redis.call('ZRANK', key, ARGV[4]) or redis.call('ZREVRANK', key, ARGV[4])
    if rank then
        rank = rank + 1
    elseif asc then
        -- The cursor's event was preened meanwhile: resume after its timestamp.
        rank = redis.call('ZCOUNT', key, '-inf', ARGV[5])
    else
        rank = redis.call('ZCOUNT', key, ARGV[5], '+inf')
    end
end
local cmd = asc and 'ZRANGE' or 'ZREVRANGE'
local page = redis.call(cmd, key, rank, rank + count - 1, 'WITHSCORES')
local out = {0}
for i = 1, #page, 2 do
    local score = tonumber(page[i + 1])
    if score < lo or score > hi then
        out[1] = 1
        return out
    end
    local event = {page[i], page[i + 1]}
    local fields = redis.call('HGETALL', ARGV[7] .. page[i])
    for j = 1, #fields do
        event[#event + 1] = fields[j]
    end
    out[#out + 1] = event
end
if #page < 2 * count then
    out[1] = 1
end
return out

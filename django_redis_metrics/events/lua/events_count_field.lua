-- Count events per value of a field that has no index, one bounded page at a time.
-- KEYS[1]          the time index
-- ARGV[1], ARGV[2] lowest and highest timestamp (inclusive)
-- ARGV[3], ARGV[4] cursor: the last id counted and its timestamp, or '' to start
-- ARGV[5]          page size (events read by this call)
-- ARGV[6]          prefix of event hash keys (in the series' hash tag, so in KEYS[1]'s slot)
-- ARGV[7]          the field
-- Returns {done, last id, last timestamp, value, count, value, count, ...}; values untagged.
local key = KEYS[1]
local lo, hi = tonumber(ARGV[1]), tonumber(ARGV[2])
local count = tonumber(ARGV[5])
local rank
if ARGV[3] == '' then
    rank = redis.call('ZCOUNT', key, '-inf', '(' .. ARGV[1])
else
    rank = redis.call('ZRANK', key, ARGV[3])
    if rank then
        rank = rank + 1
    else
        rank = redis.call('ZCOUNT', key, '-inf', ARGV[4])
    end
end
local page = redis.call('ZRANGE', key, rank, rank + count - 1, 'WITHSCORES')
local done = #page < 2 * count and 1 or 0
local tally = {}
local last_id, last_score = ARGV[3], ARGV[4]
for i = 1, #page, 2 do
    if tonumber(page[i + 1]) > hi then
        done = 1
        break
    end
    last_id, last_score = page[i], page[i + 1]
    local value = redis.call('HGET', ARGV[6] .. page[i], ARGV[7])
    if value then
        -- Stored values are '<type tag>:<text>'; group by the text.
        local text = string.sub(value, 3)
        tally[text] = (tally[text] or 0) + 1
    end
end
local out = {done, last_id, last_score}
for text, n in pairs(tally) do
    out[#out + 1] = text
    out[#out + 1] = n
end
return out

-- Count events per value of an indexed field: SSCAN the values seen, ZCOUNT each value's set.
-- KEYS[1]          the field's values set
-- ARGV[1]          SSCAN cursor ('0' to start)
-- ARGV[2], ARGV[3] lowest and highest timestamp (inclusive)
-- ARGV[4]          prefix of the field's sorted sets (prefix .. value); derived from the values
--                  read here, so not in KEYS, but in the series' hash tag and so in KEYS[1]'s slot
-- ARGV[5]          SSCAN COUNT hint
-- Returns {next cursor, value, count, ...} (values with a count of 0 left out).
local scan = redis.call('SSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[5])
local out = {scan[1]}
for _, value in ipairs(scan[2]) do
    local n = redis.call('ZCOUNT', ARGV[4] .. value, ARGV[2], ARGV[3])
    if n > 0 then
        out[#out + 1] = value
        out[#out + 1] = n
    end
end
return out

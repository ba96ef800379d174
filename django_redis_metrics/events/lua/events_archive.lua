-- Count the events of closed days of one series, in all and per value of each indexed field.
-- KEYS[1]      the series' time index (sorted set: id -> timestamp)
-- KEYS[2]      the series' meta hash ("i:<field>" for each indexed field)
-- ARGV[1]      prefix of the series' keys ("<p>:events:{<name>}:"); the keys read from it are
--              in the series' hash tag, so in KEYS[1]'s slot
-- ARGV[2..n+2] the days' bounds: day i holds timestamps from ARGV[i+1] to before ARGV[i+2]
-- Returns {{count of day 1, ..., day n}, field, {value, count 1, ..., count n, ...}, ...}
-- (values counting no event on any of the days left out).
local prefix = ARGV[1]
local days = #ARGV - 2
local function counts(key)
    local out, any = {}, false
    for i = 1, days do
        local n = redis.call('ZCOUNT', key, ARGV[i + 1], '(' .. ARGV[i + 2])
        out[i] = n
        if n > 0 then any = true end
    end
    return out, any
end
local totals = counts(KEYS[1])
local out = {totals}
local meta = redis.call('HKEYS', KEYS[2])
for _, name in ipairs(meta) do
    if string.sub(name, 1, 2) == 'i:' then
        local field = string.sub(name, 3)
        local rows = {}
        for _, value in ipairs(redis.call('SMEMBERS', prefix .. 'values:' .. field)) do
            local found, any = counts(prefix .. 'by:' .. field .. ':' .. value)
            if any then
                rows[#rows + 1] = value
                for i = 1, days do rows[#rows + 1] = found[i] end
            end
        end
        out[#out + 1] = field
        out[#out + 1] = rows
    end
end
return out

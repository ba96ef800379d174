-- Read the closed periods of one bitmap or estimate series that an archive pass keeps.
-- KEYS[i]          the series' index of one period name (sorted set: period suffix -> start)
-- ARGV[1]          prefix of the series' period keys ("<p>:<kind>:{<series>}:")
-- ARGV[2]          most periods read per index (a longer range is read on in further calls)
-- ARGV[3]          "bitmap" or "estimate"
-- ARGV[4 + 4(i-1)] the period name of KEYS[i]
-- ARGV[5 + 4(i-1)] lowest period start read (inclusive; "(x" exclusive, "-inf")
-- ARGV[6 + 4(i-1)] highest period start read (the last closed period's)
-- ARGV[7 + 4(i-1)] "1" to return the period's value (bits or registers), "0" for its count only
-- Returns, per KEYS[i], {periods listed, last start listed, start, count, value or false, ...}:
-- a bitmap's count is its BITCOUNT, an estimate's its PFCOUNT (a period whose key is gone is
-- left out, but listed: a call listing ARGV[2] periods is followed by another).
local prefix, limit, mode = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local out = {}
for i, index in ipairs(KEYS) do
    local at = 4 + 4 * (i - 1)
    local name, lo, hi, whole = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3] == '1'
    local found = redis.call('ZRANGEBYSCORE', index, lo, hi, 'WITHSCORES', 'LIMIT', 0, limit)
    local rows = {#found / 2, found[#found] or ''}
    for j = 1, #found, 2 do
        local key = prefix .. name .. ':' .. found[j]
        if redis.call('EXISTS', key) == 1 then
            local count
            if mode == 'bitmap' then
                count = redis.call('BITCOUNT', key)
            else
                count = redis.call('PFCOUNT', key)
            end
            rows[#rows + 1] = found[j + 1]
            rows[#rows + 1] = count
            rows[#rows + 1] = whole and redis.call('GET', key) or false
        end
    end
    out[i] = rows
end
return out

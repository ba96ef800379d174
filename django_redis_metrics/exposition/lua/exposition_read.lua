-- The exposition's read of many meta hashes in one call, on a single node only (where every
-- key is on this server; on Redis Cluster each key is read by its own pipelined command).
-- KEYS[1..n]   meta hashes (at most exposition.families.SCRIPT_KEYS: a call stays short)
-- ARGV[1]      the field to read from each (HGET), or '' for every field (HGETALL)
-- Returns, per key in order, its field's value or nil (HGET), or its fields and values as
-- one flat array (HGETALL); a key of another type (an error) as nil, or an empty array.
local field = ARGV[1]
local out = {}
for i, key in ipairs(KEYS) do
    local found
    if field == '' then
        found = redis.pcall('HGETALL', key)
    else
        found = redis.pcall('HGET', key, field)
    end
    if type(found) == 'table' and found.err then
        found = false
    end
    out[i] = found
end
return out

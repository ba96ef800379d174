-- Add counts to a counter's precision hashes, remember its configuration, list it.
-- KEYS[1]          the counter's meta hash (precision -> samples kept, plus 'listed')
-- KEYS[2..n+1]     one slice hash per precision
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4..]        per precision: precision, number of pairs, then (slice start, count) pairs
-- Returns 1 while the counter is not known to be listed in the catalogue (the caller must
-- register it, then set 'listed'), else 0. All or nothing: if an increment fails (it would
-- overflow a slice, or Redis refuses it), the increments already made are undone and the error
-- is returned.
local has_catalogue = tonumber(ARGV[3])
local precisions = #KEYS - 1 - has_catalogue

-- Undo every increment sent before ARGV position 'stop' (on the error path only, so the
-- success path keeps no bookkeeping).
local function undo_before(stop)
    local b = 4
    for i = 1, precisions do
        local pairs_count = tonumber(ARGV[b + 1])
        b = b + 2
        for _ = 1, pairs_count do
            if b >= stop then
                return
            end
            local count = ARGV[b + 1]
            local negated = count:sub(1, 1) == '-' and count:sub(2) or '-' .. count
            if redis.call('HINCRBY', KEYS[i + 1], ARGV[b], negated) == 0 then
                redis.call('HDEL', KEYS[i + 1], ARGV[b])
            end
            b = b + 2
        end
    end
end

-- Keys of another type fail here, before the first write (WRONGTYPE), not after the slices.
local listed = redis.call('HEXISTS', KEYS[1], 'listed') == 1
if not listed and has_catalogue == 1 then
    redis.call('ZSCORE', KEYS[#KEYS], ARGV[1])
end

local a = 4
for i = 1, precisions do
    local pairs_count = tonumber(ARGV[a + 1])
    a = a + 2
    for _ = 1, pairs_count do
        local result = redis.pcall('HINCRBY', KEYS[i + 1], ARGV[a], ARGV[a + 1])
        if type(result) == 'table' and result.err then
            undo_before(a)
            if result.err:sub(1, 4) ~= 'ERR ' then
                return redis.error_reply(result.err)  -- WRONGTYPE, OOM...: keep Redis's own code
            end
            -- This slice only (it would overflow, or holds something else than an integer).
            return redis.error_reply('DRM_REFUSED counter slice ' .. ARGV[a] .. ' refused: ' .. result.err)
        end
        a = a + 2
    end
end
local meta = {}
a = 4
for i = 1, precisions do
    meta[#meta + 1] = ARGV[a]
    meta[#meta + 1] = ARGV[2]
    a = a + 2 + 2 * tonumber(ARGV[a + 1])
end
redis.call('HSET', KEYS[1], unpack(meta))
if listed then
    return 0
end
if has_catalogue == 1 then
    redis.call('ZADD', KEYS[#KEYS], 0, ARGV[1])
    redis.call('HSET', KEYS[1], 'listed', 1)
    return 0
end
return 1

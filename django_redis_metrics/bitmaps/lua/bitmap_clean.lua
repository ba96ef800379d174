-- One bitmap's share of a cleaning pass, atomic: drop the periods older than each period
-- kind's cutoff (each period's bitmap and its index entry together), change the generation if
-- any was dropped (no cached union holding one is used again), and retire the bitmap (delete
-- its meta hash, unlist it) when no period is left.
-- KEYS[1]          the bitmap's meta hash;  KEYS[2]  its generation (see bitmap_query.lua)
-- KEYS[3..n+2]     one index sorted set per period kind (period suffix scored by its start)
-- KEYS[n+3]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          bitmap name (catalogue member);  ARGV[2]  1 when the catalogue key is given
-- ARGV[3]          TTL of the generation key (ms);  ARGV[4]  1 for a dry run (write nothing)
-- ARGV[5]          budget: most periods this call drops
-- ARGV[6]          prefix of the period bitmaps' keys (prefix .. kind .. ':' .. suffix)
-- ARGV[7..]        per period kind, in KEYS order: its name, the start of its oldest period kept
-- The period bitmaps are named by the index members, so they are not in KEYS; they carry the
-- bitmap's hash tag, so on Redis Cluster they are in KEYS[1]'s slot, on this node.
-- Returns {state, {kind, periods dropped, ...}, 1 if old periods are left past the budget};
-- state: 1 retired (dry run: would be), 0 kept, -2 no meta hash (nothing done).
--#include lib/new_generation.lua
if redis.call('EXISTS', KEYS[1]) == 0 then
    return {-2, {}, 0}
end
local has_catalogue = tonumber(ARGV[2])
local dry, budget, prefix = ARGV[4] == '1', tonumber(ARGV[5]), ARGV[6]
local n = (#ARGV - 6) / 2
local dropped, done, left, pending = 0, {}, 0, 0
for i = 1, n do
    local kind, index = ARGV[5 + 2 * i], KEYS[2 + i]
    local cutoff = '(' .. ARGV[6 + 2 * i]
    local old
    if dry then
        old = redis.call('ZCOUNT', index, '-inf', cutoff)
    else
        local members = redis.call('ZRANGEBYSCORE', index, '-inf', cutoff, 'LIMIT', 0,
            budget - dropped + 1)
        if #members > budget - dropped then
            members[#members] = nil
            pending = 1
        end
        for _, member in ipairs(members) do
            redis.call('UNLINK', prefix .. kind .. ':' .. member)
        end
        for j = 1, #members, 1000 do
            redis.call('ZREM', index, unpack(members, j, math.min(j + 999, #members)))
        end
        old = #members
        dropped = dropped + old
    end
    if old > 0 then
        done[#done + 1] = kind
        done[#done + 1] = old
    end
    left = left + redis.call('ZCARD', index) - (dry and old or 0)
end
if dropped > 0 then
    new_generation(KEYS[2], redis.call('TIME'), ARGV[3])
end
if left > 0 or pending == 1 then
    return {0, done, pending}
end
if not dry then
    redis.call('DEL', KEYS[1])
    if has_catalogue == 1 then
        redis.call('ZREM', KEYS[#KEYS], ARGV[1])
    end
end
return {1, done, 0}

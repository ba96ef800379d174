-- One counter's share of a cleaning pass, atomic: trim each due precision to the slices that
-- start after `now - samples * precision`, compact a hash that shrank, and retire the counter
-- (delete its meta hash, unlist it) when every precision hash is then empty.
-- KEYS[1]          the counter's meta hash (see counter_incr.lua)
-- KEYS[2..n+1]     one slice hash per precision the caller read in the meta hash
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name (catalogue member);  ARGV[2]  1 when the catalogue key is given
-- ARGV[3]          now (seconds);  ARGV[4]  how far writes may run ahead of the clock (seconds)
-- ARGV[5]          1 for a dry run: count what would go, write nothing
-- ARGV[6]          most fields of a compact hash (the server's hash-max-listpack-entries)
-- ARGV[7]          budget: most slice fields this call reads or deletes
-- ARGV[8..]        per precision, in KEYS order: precision, 1 if due this pass else 0
-- What falls out is known arithmetically (lib/slices.lua: a hash's fields lie in
-- (head - samples * p, head + ahead + p]): the starts in (max(head - samples * p, cleaned),
-- cutoff], `cleaned` being meta 'c:<p>', how far an earlier pass already went. So a counter
-- still written costs no field work, a stopped one only the slices that fell out since the
-- last pass. A hash holding more fields than that window allows (left by a version without
-- write-time retention) or without a head is filtered field by field (HKEYS), if it fits the
-- budget. A precision that alone exceeds the budget is left to the caller (bounded HSCAN
-- batches); one that exceeds what is left of it, to another call.
-- Returns {state, {precision, removed, compacted (0/1), ...}, {precisions too big},
-- {precisions deferred}, kept}; state: 1 retired (dry run: would be), 0 not retired, -2 no
-- meta hash (nothing done); kept: 1 when a precision this call handled still holds data (or
-- was not due, or the meta hash names other precisions than KEYS), so the counter stays
-- whatever the precisions left to the caller hold.
--#include lib/compact.lua
local meta_list = redis.call('HGETALL', KEYS[1])
if #meta_list == 0 then
    return {-2, {}, {}, {}, 0}
end
local meta, stored = {}, 0
for i = 1, #meta_list, 2 do
    meta[meta_list[i]] = meta_list[i + 1]
    if string.match(meta_list[i], '^%d+$') then
        stored = stored + 1
    end
end
local has_catalogue = tonumber(ARGV[2])
local now, ahead, dry = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1'
local entries, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local count = (#ARGV - 7) / 2
local kept = stored ~= count
local done, too_big, deferred = {}, {}, {}
local used = 0

-- Fields of `key` starting at or before `cutoff`, read whole (HKEYS; non-numeric fields kept).
local function old_fields(key, cutoff)
    local old = {}
    for _, field in ipairs(redis.call('HKEYS', key)) do
        local start = tonumber(string.match(field, '^-?%d+$'))
        if start and start <= cutoff then
            old[#old + 1] = field
        end
    end
    return old
end

-- How many of `fields` exist (dry run) or were deleted.
local function drop(key, fields)
    local removed = 0
    for i = 1, #fields, 1000 do
        local chunk = {unpack(fields, i, math.min(i + 999, #fields))}
        if dry then
            for _, value in ipairs(redis.call('HMGET', key, unpack(chunk))) do
                if value then
                    removed = removed + 1
                end
            end
        else
            removed = removed + redis.call('HDEL', key, unpack(chunk))
        end
    end
    return removed
end

local marks = {}
for i = 1, count do
    local name, key = ARGV[6 + 2 * i], KEYS[i + 1]
    local p, samples = tonumber(name), tonumber(meta[name])
    local size = redis.call('HLEN', key)
    if not samples or ARGV[7 + 2 * i] ~= '1' then
        kept = true
    elseif size > 0 then
        local cutoff = now - samples * p
        local head = tonumber(meta['h:' .. name])
        local low, slots = nil, 0
        if head then
            low = math.max(head - samples * p, tonumber(meta['c:' .. name]) or -math.huge)
            slots = math.floor((head + ahead + p - low) / p)
        end
        local plan, cost = 'scan', size
        local fall = low and math.floor((cutoff - low) / p) or 0
        if low and size <= slots then
            if fall <= 0 then
                plan, cost = 'none', 0
            elseif fall < size then
                plan, cost = 'range', fall
            end
        end
        if cost > budget then
            too_big[#too_big + 1] = p
        elseif cost > budget - used then
            deferred[#deferred + 1] = p
        elseif plan == 'none' then
            kept = true
        else
            used = used + cost
            local fields
            if plan == 'range' then
                fields = {}
                for start = low + p, cutoff, p do
                    fields[#fields + 1] = string.format('%d', start)
                end
            else
                fields = old_fields(key, cutoff)
            end
            local removed = drop(key, fields)
            local left = size - removed
            local compacted = 0
            if not dry then
                if fall > 0 then
                    marks[#marks + 1] = 'c:' .. name
                    marks[#marks + 1] = string.format('%d', low + fall * p)
                end
                if left == 0 then
                    -- The next write must give the re-created hash its TTL.
                    redis.call('HDEL', KEYS[1], 'e:' .. name)
                elseif removed > 0 or not head then
                    if redis.call('PTTL', key) == -1 then
                        redis.call('PEXPIRE', key, 2 * (samples + 1) * p * 1000)
                    end
                    if removed > 0 and left <= entries and compact_hash(key, entries) then
                        compacted = 1
                        used = used + left
                    end
                end
            end
            if removed > 0 then
                done[#done + 1] = p
                done[#done + 1] = removed
                done[#done + 1] = compacted
            end
            if left > 0 then
                kept = true
            end
        end
    end
end
if not kept and #too_big == 0 and #deferred == 0 then
    if not dry then
        redis.call('DEL', KEYS[1])
        if has_catalogue == 1 then
            redis.call('ZREM', KEYS[#KEYS], ARGV[1])
        end
    end
    return {1, done, too_big, deferred, 0}
end
if not dry and #marks > 0 then
    redis.call('HSET', KEYS[1], unpack(marks))
end
return {0, done, too_big, deferred, kept and 1 or 0}

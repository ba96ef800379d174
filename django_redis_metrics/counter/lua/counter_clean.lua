-- A batch of counters' share of a cleaning pass, each counter atomically: trim each due
-- precision to the slices that start after `now - samples * precision`, compact a hash that
-- shrank, and retire the counter (delete its meta hash, unlist it) when every precision hash is
-- then empty.
-- KEYS[1..m]       the counters' meta hashes (see counter_incr.lua): one key on Redis Cluster
-- KEYS[m+1]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          1 when the catalogue key is given;  ARGV[2]  now (seconds)
-- ARGV[3]          how far writes may run ahead of the clock (seconds)
-- ARGV[4]          1 for a dry run: count what would go, write nothing
-- ARGV[5]          most fields of a compact hash (the server's hash-max-listpack-entries)
-- ARGV[6]          budget: most slice fields this call reads or deletes, all counters together
-- ARGV[7]          the pass number: a precision p is due when it is a multiple of
--                  max(p // 60, 1) (coarse precisions less often, as Redis in Action does)
-- ARGV[8..m+7]     the counters' names (catalogue members), in KEYS order
-- A counter's precision hashes are named by its meta hash (meta key minus 'meta', then the
-- precision), so they are not in KEYS; they carry the counter's hash tag, so on Redis Cluster
-- they are in KEYS[1]'s slot, on this node.
-- What falls out is known arithmetically (lib/slices.lua: a hash's fields lie in
-- (head - samples * p, head + ahead + p]): the starts in (max(head - samples * p, cleaned),
-- cutoff], `cleaned` being meta 'c:<p>', how far an earlier pass already went. So a counter
-- still written costs no field work, a stopped one only the slices that fell out since the
-- last pass; one whose every field fell out is deleted whole. A hash no pass has checked yet
-- (new, re-created, or left by a version without write-time retention) is read whole once
-- (HKEYS) and filtered field by field; if it is bigger than the budget, only its size is
-- checked against the window. A precision whose work alone exceeds the budget is left to the
-- caller (bounded HSCAN batches); once what is left of the budget is too little for the next
-- precision, the call ends there: the caller sends that counter (whose work so far is kept,
-- and reported) and the rest again. The first counter of a call, and any in a dry run (which
-- keeps nothing), leaves that precision to the caller instead, so every call finishes at
-- least one counter. Work per call: at most `budget` slice fields, plus one compaction of at
-- most `entries` fields per precision trimmed, plus a meta hash read per counter.
-- Returns {counters finished, then per counter worth reporting: index (1-based), state,
-- {precision, removed, compacted (0/1), ...}, {precisions left to the caller}, kept}; state:
-- 1 retired (dry run: would be), 0 not retired, -2 no meta hash (nothing done), -3 stopped
-- short (budget spent: send it again); kept: 1 when a precision this call handled still holds
-- data (or was not due), so the counter stays whatever the precisions left to the caller
-- hold. A counter not worth reporting was kept, with nothing removed and nothing left.
--#include lib/compact.lua
local has_catalogue = tonumber(ARGV[1])
local now, ahead, dry = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
local entries, budget, passes = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local counters = #KEYS - has_catalogue
local used = 0

-- Fields of `key` starting at or before `cutoff`, read whole (HKEYS; non-numeric fields
-- kept), and the lowest start of the others (nil if none).
local function old_fields(key, cutoff)
    local old, lowest = {}, nil
    for _, field in ipairs(redis.call('HKEYS', key)) do
        local start = tonumber(string.match(field, '^-?%d+$'))
        if start and start <= cutoff then
            old[#old + 1] = field
        elseif start and (not lowest or start < lowest) then
            lowest = start
        end
    end
    return old, lowest
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

-- Clean one counter; returns its report (see above), or nil when there is nothing to report.
local function clean(meta_key, counter_name, first)
    local meta_list = redis.call('HGETALL', meta_key)
    if #meta_list == 0 then
        return {-2, {}, {}, 0}
    end
    local prefix = string.sub(meta_key, 1, -5)
    local meta, precisions = {}, {}
    for i = 1, #meta_list, 2 do
        meta[meta_list[i]] = meta_list[i + 1]
        if tonumber(meta_list[i]) then  -- other fields: 'listed', 'x', '<letter>:<precision>'
            precisions[#precisions + 1] = meta_list[i]
        end
    end
    local kept, spent, done, left_over, marks = false, false, {}, {}, {}
    for _, name in ipairs(precisions) do
        local key = prefix .. name
        local p, samples = tonumber(name), tonumber(meta[name])
        if passes % math.max(math.floor(p / 60), 1) ~= 0 then
            kept = true
        else
            local cutoff = now - samples * p
            local head = tonumber(meta['h:' .. name])
            local cleaned = tonumber(meta['c:' .. name])
            local low, fall = nil, 0
            if head then
                low = math.max(head - samples * p, cleaned or -math.huge)
                fall = math.floor((cutoff - low) / p)
            end
            -- size: HLEN, read only when needed; verified: the fields lie in (low, head +
            -- ahead + p] (an earlier pass checked, or this one does now).
            local plan, cost, size, verified = 'scan', 0, nil, false
            if head and cleaned then
                verified = true
                if fall <= 0 then
                    plan = 'none'
                elseif cutoff >= head + ahead + p then
                    plan = 'all'
                elseif fall > budget then
                    size = redis.call('HLEN', key)
                    plan = fall < size and 'range' or 'scan'
                else
                    plan, cost = 'range', fall
                end
            else
                -- Not checked yet (new, re-created, or left by an earlier version): read it
                -- whole once if it fits the budget; else trust its size against the window.
                size = redis.call('HLEN', key)
                if size == 0 then
                    plan = 'empty'
                elseif size <= budget then
                    plan = 'scan'
                elseif head and size <= math.floor((head + ahead + p - low) / p) then
                    verified = true
                    if fall <= 0 then
                        plan = 'none'
                    elseif cutoff >= head + ahead + p then
                        plan = 'all'
                    elseif fall < size then
                        plan = 'range'
                    end
                end
            end
            if plan == 'all' or plan == 'scan' then
                size = size or redis.call('HLEN', key)
                cost = size
            elseif plan == 'range' then
                cost = fall
            end
            if plan == 'none' then
                kept = true
                if verified and not cleaned and not dry then
                    marks[#marks + 1] = 'c:' .. name
                    marks[#marks + 1] = string.format('%d', low)
                end
            elseif plan == 'empty' or size == 0 then
                -- nothing stored: the hash expired or was emptied
            elseif cost > budget or ((dry or first) and cost > budget - used) then
                left_over[#left_over + 1] = p
            elseif cost > budget - used then
                spent = true
                break
            else
                used = used + cost
                local removed, left = size, 0
                if plan == 'all' then
                    if not dry then
                        redis.call('DEL', key)
                    end
                elseif plan == 'range' then
                    local fields = {}
                    for start = low + p, cutoff, p do
                        fields[#fields + 1] = string.format('%d', start)
                    end
                    removed = drop(key, fields)
                    if size then
                        left = size - removed
                    elseif removed > 0 then
                        left = redis.call('HLEN', key) - (dry and removed or 0)
                    else
                        left = nil  -- unknown, and no need to know: the counter is kept
                    end
                else
                    local old, lowest = old_fields(key, cutoff)
                    removed = drop(key, old)
                    left = size - removed
                    if head and fall <= 0 and left > 0 and not (lowest and lowest <= low) then
                        verified = true  -- nothing at or below `low` is left
                        marks[#marks + 1] = 'c:' .. name
                        marks[#marks + 1] = string.format('%d', low)
                    end
                end
                local compacted = 0
                if not dry then
                    if fall > 0 and left ~= 0 then
                        marks[#marks + 1] = 'c:' .. name
                        marks[#marks + 1] = string.format('%d', low + fall * p)
                    end
                    if left == 0 then
                        -- The next write must give the re-created hash its TTL, and the next
                        -- pass must see it empty (HLEN), not trust the window.
                        redis.call('HDEL', meta_key, 'e:' .. name, 'c:' .. name)
                    elseif removed > 0 or not head then
                        if redis.call('PTTL', key) == -1 then
                            redis.call('PEXPIRE', key, 2 * (samples + 1) * p * 1000)
                        end
                        if removed > 0 and left and left <= entries
                            and compact_hash(key, entries) then
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
                if left ~= 0 then
                    kept = true
                end
            end
        end
    end
    if spent then
        if not dry and #marks > 0 then
            redis.call('HSET', meta_key, unpack(marks))
        end
        return {-3, done, {}, 1}
    end
    if not kept and #left_over == 0 then
        if not dry then
            redis.call('DEL', meta_key)
            if has_catalogue == 1 then
                redis.call('ZREM', KEYS[#KEYS], counter_name)
            end
        end
        return {1, done, left_over, 0}
    end
    if not dry and #marks > 0 then
        redis.call('HSET', meta_key, unpack(marks))
    end
    if #done == 0 and #left_over == 0 then
        return nil
    end
    return {0, done, left_over, kept and 1 or 0}
end

local reply = {0}
for i = 1, counters do
    if used >= budget then
        break
    end
    local report = clean(KEYS[i], ARGV[7 + i], i == 1)
    if report then
        reply[#reply + 1] = i
        for _, part in ipairs(report) do
            reply[#reply + 1] = part
        end
        if report[1] == -3 then
            break
        end
    end
    reply[1] = i
end
return reply

-- Evaluate a bitmap query (a postfix program of unions and bit operations) inside one slot.
-- KEYS             every key the program names (source bitmaps, cache keys, temporary keys)
-- ARGV[1]          TTL of temporary keys (ms);  ARGV[2]  TTL of cached unions (ms)
-- ARGV[3]          what to answer: "count" (BITCOUNT), "getbit" (GETBIT ARGV[4]) or "store"
--                  (keep the result, return {its key, BITCOUNT, STRLEN} to copy it to another
--                  slot, or false when it is empty)
-- ARGV[5..]        the program:
--   K i              push KEYS[i] as it is (a source bitmap)
--   T i              push KEYS[i], a temporary key made by the caller: deleted at the end
--   U d n i1..in     push the union of KEYS[i1..in] stored in KEYS[d] (a temporary key)
--   C d s g n i1..in the same, cached: KEYS[d] is reused while it exists and its stamp KEYS[s]
--                    equals the bitmap's generation KEYS[g] (missing: "0"), which delete, the
--                    cleaner and a mark into a finished period change; else it is rebuilt, kept
--                    with the cache TTL and stamped
--   B t f            push KEYS[t], a union built beforehand by bitmap_union.lua (deleted at the
--                    end); f = 1 when it had sources, so a missing KEYS[t] (expired) is stale
--   S d s g t v f    a cached union built beforehand (bitmap_union.lua) into KEYS[t] under
--                    generation v: KEYS[d] is used if still valid (see C); else, if the
--                    generation is still v, KEYS[t] becomes the cache (RENAME, cache TTL,
--                    stamped); f: "skip" (the cache was valid, nothing built), "built" or
--                    "empty" (no source existed). Anything else is stale.
--   O op d           pop b, pop a, push (a op b) stored in KEYS[d]; op: AND, OR, XOR, DIFF
-- A stale prebuilt union (the generation changed, or its key expired) answers the error
-- "DRM_STALE" after deleting the temporaries: the caller builds it again.
-- Every key this script writes gets a TTL in the same step; temporaries are deleted at the end.
-- Missing keys are empty bitmaps. BITOP takes its fast word-at-a-time path only for at most 16
-- sources that all exist, so unions skip missing keys and go in chunks of 16.
local temp_ttl, cache_ttl, mode = ARGV[1], ARGV[2], ARGV[3]
local stack, temps, stale = {}, {}, false

local function exists(key)
    return redis.call('EXISTS', key) == 1
end

local function bitop(op, dest, sources, ttl)
    redis.call('BITOP', op, dest, unpack(sources))
    redis.call('PEXPIRE', dest, ttl)
end

local function generation(key)
    return redis.call('GET', key) or '0'
end

local function union(dest, cached, sources, stamp, gen)
    if cached and exists(dest) and redis.call('GET', stamp) == generation(gen) then
        return dest
    end
    local present = {}
    for _, key in ipairs(sources) do
        if exists(key) then
            present[#present + 1] = key
        end
    end
    if #present == 0 then
        return nil
    end
    if #present == 1 then
        return present[1]
    end
    local ttl = cached and cache_ttl or temp_ttl
    if not cached then
        temps[#temps + 1] = dest
    end
    local chunk = {}
    for _, key in ipairs(present) do
        chunk[#chunk + 1] = key
        if #chunk == 16 then
            bitop('OR', dest, chunk, ttl)
            chunk = {dest}
        end
    end
    if #chunk > 1 or chunk[1] ~= dest then
        bitop('OR', dest, chunk, ttl)
    end
    if cached then
        redis.call('SET', stamp, generation(gen), 'PX', cache_ttl)
    end
    return dest
end

local function operate(op, dest, a, b)
    -- nil stands for an empty bitmap; shortcuts avoid BITOP's slow path over missing keys.
    if op == 'AND' then
        if a == nil or b == nil then return nil end
    elseif op == 'DIFF' then
        if a == nil then return nil end
        if b == nil then return a end
    else
        if a == nil then return b end
        if b == nil then return a end
    end
    temps[#temps + 1] = dest
    if op == 'DIFF' then
        -- a AND NOT b, as a XOR (a AND b): BITOP NOT would clip a to b's length.
        bitop('AND', dest, {a, b}, temp_ttl)
        if exists(dest) then
            bitop('XOR', dest, {a, dest}, temp_ttl)
        else
            bitop('OR', dest, {a}, temp_ttl)
        end
    else
        bitop(op, dest, {a, b}, temp_ttl)
    end
    if exists(dest) then
        return dest
    end
    return nil
end

local pc, top = 5, 0
while pc <= #ARGV do
    local code = ARGV[pc]
    if code == 'K' or code == 'T' then
        local key = KEYS[tonumber(ARGV[pc + 1])]
        if code == 'T' then
            temps[#temps + 1] = key
        end
        top = top + 1
        stack[top] = exists(key) and key or nil
        pc = pc + 2
    elseif code == 'U' then
        local n = tonumber(ARGV[pc + 2])
        local sources = {}
        for i = 1, n do
            sources[i] = KEYS[tonumber(ARGV[pc + 2 + i])]
        end
        top = top + 1
        stack[top] = union(KEYS[tonumber(ARGV[pc + 1])], false, sources)
        pc = pc + 3 + n
    elseif code == 'C' then
        local n = tonumber(ARGV[pc + 4])
        local sources = {}
        for i = 1, n do
            sources[i] = KEYS[tonumber(ARGV[pc + 4 + i])]
        end
        top = top + 1
        stack[top] = union(KEYS[tonumber(ARGV[pc + 1])], true, sources,
                           KEYS[tonumber(ARGV[pc + 2])], KEYS[tonumber(ARGV[pc + 3])])
        pc = pc + 5 + n
    elseif code == 'B' then
        local key = KEYS[tonumber(ARGV[pc + 1])]
        temps[#temps + 1] = key
        if exists(key) then
            top = top + 1
            stack[top] = key
        elseif ARGV[pc + 2] == '1' then
            stale = true
            break
        else
            top = top + 1
            stack[top] = nil
        end
        pc = pc + 3
    elseif code == 'S' then
        local dest, stamp = KEYS[tonumber(ARGV[pc + 1])], KEYS[tonumber(ARGV[pc + 2])]
        local staged = KEYS[tonumber(ARGV[pc + 4])]
        local built_under, state = ARGV[pc + 5], ARGV[pc + 6]
        local current = generation(KEYS[tonumber(ARGV[pc + 3])])
        top = top + 1
        if exists(dest) and redis.call('GET', stamp) == current then
            temps[#temps + 1] = staged
            stack[top] = dest
        elseif current ~= built_under or state == 'skip' then
            temps[#temps + 1] = staged
            stale = true
            break
        elseif state == 'empty' then
            stack[top] = nil
        elseif exists(staged) then
            redis.call('RENAME', staged, dest)
            redis.call('PEXPIRE', dest, cache_ttl)
            redis.call('SET', stamp, current, 'PX', cache_ttl)
            stack[top] = dest
        else
            stale = true
            break
        end
        pc = pc + 7
    elseif code == 'O' then
        local b, a = stack[top], stack[top - 1]
        top = top - 1
        stack[top] = operate(ARGV[pc + 1], KEYS[tonumber(ARGV[pc + 2])], a, b)
        pc = pc + 3
    else
        return redis.error_reply('ERR unknown bitmap program code ' .. tostring(code))
    end
end

if stale then
    for _, key in ipairs(temps) do
        redis.call('UNLINK', key)
    end
    return redis.error_reply('DRM_STALE a prebuilt union is stale; build it again')
end

local result = stack[top]
local answer
if mode == 'count' then
    answer = result and redis.call('BITCOUNT', result) or 0
elseif mode == 'getbit' then
    answer = result and redis.call('GETBIT', result, ARGV[4]) or 0
elseif result then
    answer = {result, redis.call('BITCOUNT', result), redis.call('STRLEN', result)}
else
    answer = false
end
for _, key in ipairs(temps) do
    if not (mode == 'store' and key == result) then
        redis.call('UNLINK', key)
    end
end
return answer

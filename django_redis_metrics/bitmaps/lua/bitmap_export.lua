-- One step of exporting a bitmap's union of some period keys out of its slot (Redis Cluster: a
-- labelled bitmap read as a whole unites its series, each in its own slot).
-- KEYS[1]          a temporary key in this slot (written with a TTL, deleted by the last step)
-- KEYS[2..]        the period keys of this step (at most bitmaps.MAX_SCRIPT_SOURCES)
-- ARGV[1]          TTL of the temporary key (ms);  ARGV[2]  1 on the last step
-- Earlier steps OR their sources into KEYS[1] and return 0. The last step returns the union
-- (false if no source existed): {"dump", DUMP payload} when it is sparse (under one set bit
-- per 8 bytes: DUMP's LZF compression shrinks it many times), else {"raw", its bytes}.
local temp, last = KEYS[1], ARGV[2] == '1'
local chunk = {}
if redis.call('EXISTS', temp) == 1 then
    chunk[1] = temp
end
local present = 0
for i = 2, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then
        present = present + 1
        chunk[#chunk + 1] = KEYS[i]
    end
end
local result = nil
if #chunk == 1 and last then
    result = chunk[1]  -- a single existing key: exported as it is
elseif #chunk > 0 then
    -- BITOP's fast path takes at most 16 existing sources: go in chunks, carrying the result.
    local part = {}
    for _, key in ipairs(chunk) do
        part[#part + 1] = key
        if #part == 16 then
            redis.call('BITOP', 'OR', temp, unpack(part))
            part = {temp}
        end
    end
    if #part > 1 or part[1] ~= temp then
        redis.call('BITOP', 'OR', temp, unpack(part))
    end
    redis.call('PEXPIRE', temp, ARGV[1])
    result = temp
end
if not last then
    return 0
end
local answer = false
if result and redis.call('EXISTS', result) == 1 then
    if redis.call('BITCOUNT', result) * 8 < redis.call('STRLEN', result) then
        answer = {'dump', redis.call('DUMP', result)}
    else
        answer = {'raw', redis.call('GET', result)}
    end
end
redis.call('UNLINK', temp)
return answer

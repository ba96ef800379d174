-- Map ids (strings, UUIDs) to dense bit offsets, assigning new ones atomically.
-- KEYS[1]  the mapping hash (id -> offset);  KEYS[2]  its sequence (offsets handed out so far)
-- KEYS[3]  the kind of user ids of the PREFIX: "mapped" is checked and recorded when assigning
-- ARGV     the ids;  ARGV[1] is "1" to assign missing ids, "0" to only look them up
-- Returns one offset per id (ARGV[2..]), or -1 for an unknown id when only looking up;
-- {-2, the PREFIX's kind} when assigning into a PREFIX of integer ids (nothing written).
local assign = ARGV[1] == '1'
if assign then
    local stored = redis.call('GET', KEYS[3])
    if not stored then
        redis.call('SET', KEYS[3], 'mapped')
    elseif stored ~= 'mapped' then
        return {-2, stored}
    end
end
local result = {}
for i = 2, #ARGV do
    local offset = redis.call('HGET', KEYS[1], ARGV[i])
    if offset then
        offset = tonumber(offset)
    elseif assign then
        offset = redis.call('INCR', KEYS[2]) - 1
        if offset >= 4294967296 then
            return redis.error_reply('DRM_REFUSED the id mapping is full (2^32 ids assigned)')
        end
        redis.call('HSET', KEYS[1], ARGV[i], offset)
    else
        offset = -1
    end
    result[#result + 1] = offset
end
return result

-- Change a bitmap's generation (see bitmap_query.lua) to the server time, made unique against
-- the current value, with a TTL: no union cached under an earlier generation is used again.
local function new_generation(key, time, ttl_ms)
    local gen = time[1] .. '.' .. time[2]
    local current = redis.call('GET', key)
    if current and string.sub(current, 1, #gen) == gen then
        gen = current .. '+'
    end
    redis.call('SET', key, gen, 'PX', ttl_ms)
end

-- A temporary HyperLogLog that many others are merged into starts dense (empty, its cached
-- count marked invalid): PFMERGE into a new key keeps it sparse while the sources are, and
-- setting registers one by one in a sparse string costs about 8x a dense merge (100 sparse
-- sources: 4 ms against 0.5 ms). The layout is Redis' own (hyperloglog.c): "HYLL", encoding 0
-- (dense), 3 unused bytes, the 8-byte cached count, 16,384 6-bit registers.
local function dense_empty(key, ttl)
    if redis.call('EXISTS', key) == 0 then
        local header = 'HYLL' .. string.char(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128)
        redis.call('SET', key, header .. string.rep(string.char(0), 12288), 'PX', ttl)
    end
end

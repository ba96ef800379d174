-- Add counts to a counter's precision hashes and to its lifetime total, enforce each
-- precision's retention, remember the counter's configuration, list it.
-- KEYS[1]          the counter's meta hash: 't' -> the lifetime total (the net sum of every
--                  count ever added, never trimmed), 'listed', and per precision: precision ->
--                  samples kept, 'h:<precision>' -> its head (see lib/slices.lua),
--                  'e:<precision>' -> when its hash expires (ms)
-- KEYS[2..n+1]     one slice hash per precision
-- KEYS[n+2]        the catalogue, only when it can be written here (not on Redis Cluster)
-- ARGV[1]          counter name (catalogue member)
-- ARGV[2]          samples kept per precision
-- ARGV[3]          1 when the catalogue key is given, else 0
-- ARGV[4]          how many seconds a slice may start after the Redis clock (later: refused)
-- ARGV[5]          what this call adds to the lifetime total (its increments, counted once)
-- ARGV[6..]        per precision: precision, number of pairs, then (slice start, count) pairs
-- ARGV[#ARGV]      the latest slice start of the call (compared with the Redis clock first)
-- or, for one increment (`incr`: 14 arguments for 7 precisions, not 34):
-- ARGV[6]          '*'
-- ARGV[7]          the latest of its slice starts (compared with the Redis clock first)
-- ARGV[8..]        the start of the increment's slice at each precision, in KEYS order (the
--                  count is ARGV[5]; each precision is its key's last part)
-- or, to repair after the transaction fast path (counter/fast.py) added the increment ARGV[5]
-- to those slices and to the lifetime total but found a key missing or a slice new:
-- ARGV[6]          '!'
-- ARGV[7]          per precision in KEYS order, '0': nothing to do, '1': its slice was new
--                  (the upkeep of a slice that opened), '2': its key was missing too (its
--                  TTL set again whatever the meta hash says)
-- ARGV[8..]        as in the short form; nothing is added again, no clock check is made (the
--                  fast path only writes to slices a script call accepted)
-- Retention, at write time: each hash keeps the newest `samples` slices up to its head. An
-- increment of an existing slice is a plain HINCRBY (and one of the total); only a write that
-- creates a slice (once per slice) reads and writes the retention state: a new slice older
-- than the window is removed again; when the head moves on, the slices that fell out are
-- deleted with one HDEL (known arithmetically, no scan), or the hash is rebuilt when all of it
-- fell out; the hash's TTL (twice its retention) is refreshed once half of it has passed, and
-- the meta hash expires no earlier than any hash. So a hash never holds more than `samples`
-- fields (plus the few a clock up to ARGV[4] s ahead may add), and a counter nobody writes any
-- more disappears by itself, lifetime total included.
-- Cost (Redis time per call, see docs/benchmarks.md): the clock is read (TIME) and every start
-- compared with it; the slices are written; then the meta hash is written once (HINCRBY of the
-- total, plus HEXISTS of the listing on a cluster), or, when a slice is new, read once (HMGET)
-- and written once (HSET, the total included). An increment of existing slices is the clock,
-- its HINCRBYs and the total's, nothing else (a script call's own cost grows with its
-- arguments, hence the short form of one increment). Numbers are parsed with `+ 0` rather
-- than tonumber(), which parses twice.
-- Returns 1 while the counter is not known to be listed in the catalogue (the caller must
-- register it, then set 'listed'), else 0. All or nothing: a new slice starting too far ahead
-- of the Redis clock is refused before any write; if an increment fails
-- (it would overflow a slice or the lifetime total, or Redis refuses it: a key of another
-- type...), the increments already made are undone and the error is returned before any slice
-- is deleted or any meta field written.
local FIRST = 6
local has_catalogue = ARGV[3] == '1'
local last = has_catalogue and #KEYS - 1 or #KEYS
local repair = ARGV[6] == '!'
local one = ARGV[6] == '*' or repair

--#include lib/clock.lua
local ahead = ARGV[4] + 0
local now, now_ms = nil, nil
-- The call in its general form: ARGV, or, for one increment, built from it once a slice opened.
local A = ARGV

local function negated(count)
    if count == '0' then
        return count
    end
    return count:sub(1, 1) == '-' and count:sub(2) or '-' .. count
end

-- Undo one increment's writes to KEYS[2..upto], and the lifetime total's when `total`.
local function undo_one(upto, total)
    local back = negated(ARGV[5])
    if total then
        redis.call('HINCRBY', KEYS[1], 't', back)
    end
    for i = 2, upto do
        if redis.call('HINCRBY', KEYS[i], ARGV[6 + i], back) == 0 then
            redis.call('HDEL', KEYS[i], ARGV[6 + i])
        end
    end
end

-- Undo every increment sent before A position 'stop', and the lifetime total's when
-- `total` (on the error path only, so the success path keeps no bookkeeping).
local function undo_before(stop, total)
    if one then
        return undo_one(last, total)
    end
    if total then
        redis.call('HINCRBY', KEYS[1], 't', negated(A[5]))
    end
    local b = FIRST
    for i = 2, last do
        local pairs_count = tonumber(A[b + 1])
        b = b + 2
        for _ = 1, pairs_count do
            if b >= stop then
                return
            end
            if redis.call('HINCRBY', KEYS[i], A[b], negated(A[b + 1])) == 0 then
                redis.call('HDEL', KEYS[i], A[b])
            end
            b = b + 2
        end
    end
end

-- A reply of a meta hash or catalogue command that failed, after undoing this call's writes
-- (a key of another type: WRONGTYPE; a total that would overflow: refused); else nil.
local function failed(reply, total, what)
    if type(reply) ~= 'table' or not reply.err then
        return nil
    end
    undo_before(#A + 1, total or repair)  -- a repair undoes the transaction's total too
    if reply.err:sub(1, 4) ~= 'ERR ' then
        return redis.error_reply(reply.err)
    end
    return redis.error_reply('DRM_REFUSED counter ' .. ARGV[1] .. ' ' .. what .. ' refused: ' .. reply.err)
end

-- The reply of an increment of slice `start` that failed (its call's earlier writes undone).
local function refused_increment(result, start)
    if result.err:sub(1, 4) ~= 'ERR ' then
        return redis.error_reply(result.err)  -- WRONGTYPE, OOM...: keep Redis's own code
    end
    -- This slice only (it would overflow, or holds something else than an integer).
    return redis.error_reply('DRM_REFUSED counter slice ' .. start .. ' refused: ' .. result.err)
end

-- No slice opened: the lifetime total, and whether the caller must list the counter.
local function total_only()
    local err = failed(redis.pcall('HINCRBY', KEYS[1], 't', ARGV[5]), false, 'lifetime total')
    if err then
        return err
    end
    if has_catalogue then
        -- Here the write that opened a slice listed the counter in the same script: an
        -- increment of an existing slice needs no check (were the listing lost some other way,
        -- the next slice opened lists the counter again).
        return 0
    end
    return redis.call('HEXISTS', KEYS[1], 'listed') == 1 and 0 or 1
end

-- The increments; `fresh` lists, for each precision where a slice was created, its A
-- position, its key's index, and (filled below) its newest and oldest slice written.
local fresh = nil
-- The keys whose TTL is set again whatever the meta hash says (repair: they were missing).
local forced = {}
if repair then
    now, now_ms = server_clock()
    local c = ARGV[5]
    A = {ARGV[1], ARGV[2], ARGV[3], ARGV[4], '0'}  -- the total was added by the transaction
    fresh = {}
    for i = 2, last do
        local flag = ARGV[7]:sub(i - 1, i - 1)
        if flag ~= '0' then
            forced[i] = flag == '2'
            fresh[#fresh + 1] = #A + 1
            fresh[#fresh + 1] = i
            fresh[#fresh + 1] = 0
            fresh[#fresh + 1] = 0
            A[#A + 1] = string.match(KEYS[i], '(%d+)$')
            A[#A + 1] = '1'
            A[#A + 1] = ARGV[6 + i]
            A[#A + 1] = c
        end
    end
    if #fresh == 0 then
        return 0
    end
elseif one then
    -- One increment. Refused before anything is written (replicas and the AOF see nothing)
    -- when a slice it would open starts more than ARGV[4] s after the Redis clock: the
    -- latest start first, then, past the clock, each late start is looked up.
    now, now_ms = server_clock()
    if ARGV[7] + 0 > now + ahead then
        for i = 2, last do
            local start = ARGV[6 + i]
            if start + 0 > now + ahead and redis.pcall('HEXISTS', KEYS[i], start) == 0 then
                return ahead_refusal('counter ' .. ARGV[1], start, now, ahead)
            end
        end
    end
    local c = ARGV[5]
    local count = c + 0
    local opened = nil
    for i = 2, last do
        local result = redis.pcall('HINCRBY', KEYS[i], ARGV[6 + i], c)
        if type(result) == 'table' then
            undo_one(i - 1, false)
            return refused_increment(result, ARGV[6 + i])
        end
        if result == count then
            opened = opened or {}
            opened[#opened + 1] = i
        end
    end
    if not opened then
        return total_only()
    end
    -- The general form of the precisions where a slice opened (the others need no upkeep);
    -- undoing still covers every precision (undo_before sees `one`).
    A = {ARGV[1], ARGV[2], ARGV[3], ARGV[4], c}
    fresh = {}
    for _, i in ipairs(opened) do
        local start = ARGV[6 + i]
        fresh[#fresh + 1] = #A + 1
        fresh[#fresh + 1] = i
        fresh[#fresh + 1] = 0
        fresh[#fresh + 1] = 0
        A[#A + 1] = string.match(KEYS[i], '(%d+)$')  -- the precision
        A[#A + 1] = '1'
        A[#A + 1] = start
        A[#A + 1] = c
    end
else
    -- Refused before anything is written (replicas and the AOF see nothing): a call that
    -- would open a slice starting more than ARGV[4] s after the Redis clock. The last ARGV,
    -- the latest start of the call, is compared first (one comparison on the way of every
    -- increment); past the clock, each precision's latest start is, and a precision with a
    -- start that late looks its slices up (a slice that exists already is only added to):
    -- refused if one is new.
    now, now_ms = server_clock()
    if ARGV[#ARGV] + 0 > now + ahead then
        local a = FIRST
        for i = 2, last do
            local pairs_end = a + 2 * ARGV[a + 1]
            local latest_at = a + 2
            for b = a + 4, pairs_end, 2 do
                if ARGV[b] + 0 > ARGV[latest_at] + 0 then
                    latest_at = b
                end
            end
            if ARGV[latest_at] + 0 > now + ahead then
                for b = a + 2, pairs_end, 2 do
                    if redis.pcall('HEXISTS', KEYS[i], ARGV[b]) == 0 then
                        return ahead_refusal('counter ' .. ARGV[1], ARGV[latest_at], now, ahead)
                    end
                end
            end
            a = pairs_end + 2
        end
    end
    local a = FIRST
    local count_text, count = nil, nil
    for i = 2, last do
        local at, pairs_count = a, ARGV[a + 1]
        pairs_count = pairs_count == '1' and 1 or tonumber(pairs_count)
        a = a + 2
        for _ = 1, pairs_count do
            local result = redis.pcall('HINCRBY', KEYS[i], ARGV[a], ARGV[a + 1])
            if type(result) == 'table' then
                undo_before(a, false)
                return refused_increment(result, ARGV[a])
            end
            if ARGV[a + 1] ~= count_text then
                count_text = ARGV[a + 1]
                count = count_text + 0
            end
            if result == count then
                if not fresh then
                    fresh = {at, i, 0, 0}
                elseif fresh[#fresh - 2] ~= i then
                    fresh[#fresh + 1] = at
                    fresh[#fresh + 1] = i
                    fresh[#fresh + 1] = 0
                    fresh[#fresh + 1] = 0
                end
            end
            a = a + 2
        end
    end
    if not fresh then
        return total_only()
    end
end

-- Lists the counter when the catalogue is here (undoing this call's writes if the catalogue
-- refuses); returns the error reply or nil, and whether the caller must list the counter.
local function listing(listed, total)
    if listed then
        return nil, 0
    end
    if not has_catalogue then
        return nil, 1
    end
    return failed(redis.pcall('ZADD', KEYS[#KEYS], 0, A[1]), total, 'catalogue'), 0
end

--#include lib/slices.lua
local samples_text = A[2]
local samples = samples_text + 0
local fields = {'listed', 't'}
for j = 1, #fresh, 4 do
    local at = fresh[j]
    local last_pair = A[at + 1]
    last_pair = at + 2 * (last_pair == '1' and 1 or last_pair)
    local newest = A[at + 2] + 0
    local oldest = newest
    for b = at + 4, last_pair, 2 do
        local start = A[b] + 0
        if start > newest then
            newest = start
        elseif start < oldest then
            oldest = start
        end
    end
    fresh[j + 2], fresh[j + 3] = newest, oldest
    local p = A[at]
    fields[#fields + 1] = p
    fields[#fields + 1] = 'h:' .. p
    fields[#fields + 1] = 'e:' .. p
end
local meta = redis.pcall('HMGET', KEYS[1], unpack(fields))
local err = failed(meta, false, 'meta')
if err then
    return err
end
-- The lifetime total: added here when exact in a Lua number (below 2^53), else by HINCRBY.
local changed = {}
local old_total, delta = (meta[2] or 0) + 0, A[5] + 0
if math.abs(old_total) < 2 ^ 52 and math.abs(delta) < 2 ^ 52 then
    changed[1] = 't'
    changed[2] = string.format('%d', old_total + delta)
else
    err = failed(redis.pcall('HINCRBY', KEYS[1], 't', A[5]), false, 'lifetime total')
    if err then
        return err
    end
end
local reply
err, reply = listing(meta[1], #changed == 0)
if err then
    return err
end
if not meta[1] and has_catalogue then
    changed[#changed + 1] = 'listed'
    changed[#changed + 1] = 1
end
local meta_expiry = 0
for j = 1, #fresh, 4 do
    local at, key, newest, oldest = fresh[j], KEYS[fresh[j + 1]], fresh[j + 2], fresh[j + 3]
    local m = 3 * (j - 1) / 4 + 3
    local p = A[at] + 0
    local old_samples, old_head, key_expiry = meta[m], meta[m + 1], meta[m + 2]
    old_head = old_head and old_head + 0 or nil
    local head = slice_head(old_head, newest, math.floor(now / p) * p)
    local floor = head - samples * p
    if oldest <= floor then
        local stale = {}
        for b = at + 2, at + 2 * A[at + 1], 2 do
            if A[b] + 0 <= floor then
                stale[#stale + 1] = A[b]  -- older than the window: not kept
            end
        end
        redis.call('HDEL', key, unpack(stale))
    end
    local rebuilt = false
    if not (old_head and old_samples) then
        changed[#changed + 1] = fields[m + 1]
        changed[#changed + 1] = string.format('%d', head)
    elseif old_samples == samples_text then
        if head == old_head + p then
            redis.call('HDEL', key, string.format('%d', floor))  -- the one slice that fell out
        elseif head > old_head then
            rebuilt = drop_slices(key, old_head, samples, head, samples, p, ahead)
        end
        if head > old_head then
            changed[#changed + 1] = fields[m + 1]
            changed[#changed + 1] = string.format('%d', head)
        end
    else
        old_samples = old_samples + 0
        if head > old_head or samples < old_samples then
            rebuilt = drop_slices(key, old_head, old_samples, head, samples, p, ahead)
            changed[#changed + 1] = fields[m + 1]
            changed[#changed + 1] = string.format('%d', head)
        end
    end
    if old_samples ~= samples_text then
        changed[#changed + 1] = fields[m]
        changed[#changed + 1] = samples_text
    end
    local ttl = 2 * (samples + 1) * p * 1000
    if rebuilt or forced[fresh[j + 1]] or ttl_due(key, old_head, key_expiry, now_ms, ttl) then
        redis.call('PEXPIREAT', key, now_ms + ttl)
        if now_ms + ttl > meta_expiry then
            meta_expiry = now_ms + ttl
        end
        changed[#changed + 1] = fields[m + 2]
        changed[#changed + 1] = string.format('%d', now_ms + ttl)
    end
end
if #changed > 0 then
    redis.call('HSET', KEYS[1], unpack(changed))
end
if meta_expiry > 0 then
    expire_no_earlier(KEYS[1], meta_expiry, now_ms)
end
return reply

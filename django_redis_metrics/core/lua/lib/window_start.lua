-- The start, as an integer string, of the window of width w holding time t.
-- t / w is rounded in floating point; k is corrected so that k * w <= t < (k + 1) * w holds
-- exactly, or a cached count could be left stale by an event on a window boundary.
local function window_start(t, w)
    local k = math.floor(t / w)
    if k * w > t then
        k = k - 1
    elseif (k + 1) * w <= t then
        k = k + 1
    end
    return string.format('%d', k * w)
end

-- raise-fence: raise a lock's fencing counter to at least a given value (never lowers it).
-- A Redlock quorum writes the token it hands out (the maximum over the nodes it won) back to a
-- quorum of nodes this way, so any later quorum, which shares a node with this one, starts above it.
-- Also usable by an operator to restore a counter a node lost.
-- KEYS[1] the fencing counter of the lock (never expires)
-- ARGV[1] the value the counter must reach, an integer below 2^53
-- Reply: the counter afterwards (max of its value and ARGV[1]).
local floor = tonumber(ARGV[1])
local current = tonumber(redis.call('get', KEYS[1]) or '0')
if current >= floor then return current end
redis.call('set', KEYS[1], string.format('%d', floor))
return floor

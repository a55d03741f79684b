-- raise-fence: raise a lock's fencing counter to at least a given value (never lowers it).
-- A Redlock quorum writes the token it hands out (the maximum over the nodes it won) back to a
-- quorum of nodes this way, so any later quorum, which shares a node with this one, starts above it.
-- Also usable by an operator to restore a counter a node lost.
-- KEYS[1] the fencing counter of the lock (never expires)
-- KEYS[2] the lock key (its value: the holder, see holder.lua; a Semaphore's sorted set of
--         holders, whose members carry their own tokens, is left alone)
-- ARGV[1] the value the counter must reach, an integer below 2^53
-- Reply: {1, ARGV[1]} when this call raised the counter (it was below ARGV[1]); {0, the counter}
--        when it was at or above ARGV[1] already (left as it is). A Redlock write-back counts only
--        the first: a node whose counter already reached the token may have handed it to another
--        holder, or taken another quorum's write-back of it (quorum-nodes.ts, claimFence).
-- The holder's value (or a release's) records the counter, and a release (or the next acquire)
-- hands the next token out from it without reading the counter (grant-waiter.lua,
-- acquire-or-queue.lua): it is raised too, or that grant would take a token below this one and
-- lower the counter. (A release's 60 s starts again: harmless.)
-- #include server-time.lua
-- #include holder.lua
local floor = tonumber(ARGV[1])
local current = tonumber(redis.call('get', KEYS[1]) or '0')
if current >= floor then return {0, current} end
redis.call('set', KEYS[1], string.format('%d', floor))
if redis.call('type', KEYS[2]).ok ~= 'string' then return {1, floor} end
local holder, released = decode_holder(redis.call('get', KEYS[2]))
if holder and holder.fence and holder.fence < floor then
  local _, now = server_time()
  holder.fence = floor
  store_holder(KEYS[2], holder, now)
elseif released and released.fence < floor then
  store_released(KEYS[2], floor, released.prev, released.queue_expiry)
end
return {1, floor}

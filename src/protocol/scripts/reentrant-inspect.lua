-- reentrant-inspect: read a ReentrantMutex's state in one round trip, changing nothing.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the queue of waiter entries
-- KEYS[4] the holds: a hash of the holder's other hold tokens (see reentrant-holds.lua)
-- Reply: {hold token in the lock key or '' when free, PTTL in ms (-2 when free, -1 when without
--         expiry), last fencing token handed out (0 when none), the holder's label ('' when none
--         or free), number of queued entries, then the holder's other hold tokens}
-- #include holder.lua
local holder = decode_holder(redis.call('get', KEYS[1]))
local fence = redis.call('get', KEYS[2])
-- A free lock's key may hold the release that freed it (holder.lua): its PTTL is not a lease's.
local reply = {
  holder and holder.token or '', holder and redis.call('pttl', KEYS[1]) or -2, tonumber(fence or '0'),
  holder and holder.label or '', redis.call('llen', KEYS[3]),
}
if holder then
  for _, token in ipairs(redis.call('hkeys', KEYS[4])) do reply[#reply + 1] = token end
end
return reply

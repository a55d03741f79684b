-- hand-off-inspect: read a hand-off lock's state (Mutex, FairMutex, a RedlockMutex's server) in one
-- round trip, changing nothing.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the waiting: a hash with a field per queued token (a FairMutex's, or a RedlockMutex's
--         line's)
-- Reply: {owner token or '' when free, PTTL in ms (-2 when free, -1 when without expiry),
--         last fencing token handed out (0 when none), the holder's label ('' when none or free),
--         number of queued waiters (live or not yet dropped)}
-- #include holder.lua
local holder = decode_holder(redis.call('get', KEYS[1]))
local fence = redis.call('get', KEYS[2])
-- A free lock's key may hold the release that freed it (holder.lua): its PTTL is not a lease's.
return {
  holder and holder.token or '', holder and redis.call('pttl', KEYS[1]) or -2, tonumber(fence or '0'),
  holder and holder.label or '', redis.call('hlen', KEYS[3]),
}

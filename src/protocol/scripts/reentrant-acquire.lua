-- reentrant-acquire: take a ReentrantMutex, or take it again for an owner that holds it already
-- (one more hold, the same fencing token), or join (or renew a place in) its queue.
-- KEYS[1] the lock key (its value: the holder, see holder.lua; its token is a hold token)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the queue: a list of waiter entries, oldest first (see arrival-queue.lua)
-- KEYS[4] the waiting: a hash, queued token -> its current deadline ms (server time)
-- KEYS[5] the holds: a hash of the holder's other hold tokens (see reentrant-holds.lua)
-- ARGV[1] the hold token of this acquisition: the owner's 16 hex characters, then 16 random ones
--         (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long this waiter's queue place lives without being renewed, in ms; 0 for a single try
--         that never queues (tryAcquire)
-- ARGV[4] the channel this waiter hears its hand-off on
-- ARGV[5] '1' when an earlier attempt of this acquire call may have queued it, else '0'
-- ARGV[6] '1' to take a free lock whoever is queued (the Mutex's policy), '0' to serve the queue first
-- ARGV[7] the holder label stored with the lock while this call holds it ('' for none; holder.lua)
-- Reply: {1, fencing token, server time ms} when acquired, or re-entered: the owner holds the lock
--        already, this token is added to its holds, the fencing token is the holder's, and the lock
--        lives at least the lease TTL from now (never less than before);
--        {0, wait bound in ms, server time ms} when queued (or not taken, with ARGV[3] 0), as
--        hand-off-acquire.lua.
-- Cost: O(1), as hand-off-acquire.lua; a re-entry is GET, HSET, SET, PEXPIRE.
-- #include server-time.lua
-- #include next-fence.lua
-- #include holder.lua
-- #include arrival-queue.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include take-free.lua
-- #include acquire-or-queue.lua
-- #include reentrant-holds.lua
local now_us, now = server_time()
local lock = hand_off_lock(KEYS[1], KEYS[2], arrival_queue(KEYS[3], KEYS[4]), 1)
local me = ARGV[1]
local holder, released = decode_holder(redis.call('get', KEYS[1]))
if holder and holder.expiry and same_owner(holder.token, me) then
  if holder.token ~= me then redis.call('hset', KEYS[5], me, '1') end
  keep_until(KEYS[1], KEYS[5], holder, tonumber(ARGV[2]), now)
  -- An earlier attempt of this call may have queued it before the owner took the lock elsewhere.
  if ARGV[5] == '1' then lock.queue:leave(me) end
  return {1, holder.fence, now}
end
-- A free lock has no holds (they expire with it; this makes sure of it for the next owner).
if not holder and not released then redis.call('del', KEYS[5]) end
return acquire_or_queue(lock, holder, released, ARGV, ARGV[7] or '', now_us, now)

-- reentrant-release: give back one hold of a ReentrantMutex; the last one releases the lock, handing
-- it straight to the oldest live waiter (as hand-off-release.lua), or leave its queue.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the queue: a list of waiter entries, oldest first
-- KEYS[4] the waiting: a hash, queued token -> its current deadline ms (server time)
-- KEYS[5] the holds: a hash of the holder's other hold tokens (see reentrant-holds.lua)
-- ARGV[1] the hold token given back, or whose queue entry is removed
-- ARGV[2] '1' to skip a waiter whose hand-off PUBLISH reached nobody (its process is gone), '0' not to
-- Reply: 1 when this token was a hold (the lock stays with the owner's other holds, or, when it was
--        the last, is released as by hand-off-release.lua), or released the lock last (a re-sent
--        release); 0 when it was not a hold: released already (more releases than acquisitions),
--        never granted, or expired (its queue entry, if any, is removed).
-- When the hold in the lock key's value goes while others remain, one of them takes its place there
-- (same owner, same fencing token, same expiry).
-- Cost: O(1) for an inner hold (GET, HDEL); the last hold costs hand-off-release's, plus one HKEYS.
-- #include server-time.lua
-- #include next-fence.lua
-- #include holder.lua
-- #include arrival-queue.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include release-or-leave.lua
-- #include reentrant-holds.lua
local me = ARGV[1]
local holder, released = decode_holder(redis.call('get', KEYS[1]))
if holder and holder.expiry and same_owner(holder.token, me) then
  -- A hold token is either the one in the lock key's value or in the holds, never both.
  if holder.token ~= me then
    if redis.call('hdel', KEYS[5], me) == 1 then return 1 end
  else
    local others = redis.call('hkeys', KEYS[5])
    if #others > 0 then
      redis.call('hdel', KEYS[5], others[1])
      holder.token = others[1]
      local _, now = server_time()
      store_holder(KEYS[1], holder, now)
      return 1
    end
  end
end
local lock = hand_off_lock(KEYS[1], KEYS[2], arrival_queue(KEYS[3], KEYS[4]), 1)
return release_or_leave(lock, holder, released, me, ARGV[2] == '1')

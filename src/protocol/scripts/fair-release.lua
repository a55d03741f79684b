-- fair-release: release a FairMutex by handing it straight to the oldest live waiter, or leave its
-- queue (a waiter that timed out or was aborted).
-- KEYS[1] the lock key (its value: the holder, see fair-holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the queue: a list of waiter entries, oldest first
-- KEYS[4] the waiting: a hash, queued token -> its current deadline ms (server time)
-- KEYS[5] the release tombstone: the last token that freed this lock with nobody to hand it to,
--         kept 60 s
-- ARGV[1] the token that releases the lock, or whose queue entry is removed
-- ARGV[2] '1' to skip a waiter whose hand-off PUBLISH reached nobody (its process is gone; Mutex),
--         '0' to hand it the lock anyway (FairMutex: its place is kept even while its subscriber
--         reconnects; a crashed waiter costs at most its TTL)
-- ARGV[3] a channel to PUBLISH the releasing token on when this release frees the lock with nobody
--         to hand it to, or '' for none (waiters that do not queue, e.g. a Redlock quorum's, hear it
--         there; the token tells them the same release announced on several servers apart)
-- ARGV[4] what to PUBLISH there instead of the token, or '' (or absent) for the token (a Redlock
--         attempt giving back partial votes names the attempt, so each give-back is news)
-- Reply: 1 when this token held the lock (it now belongs to the next live waiter, or is free when
--        none is left), or when this token is the one that released it last (a release re-sent
--        after its reply was lost: it did release; nothing changes); 0 when it did not (its queue
--        entry, if any, is removed; nothing else changes, except that a lock found free with live
--        waiters queued is handed to the oldest of them).
-- A hand-off sets the lock to the waiter's token with the waiter's TTL, takes the next fencing token
-- and publishes "token:fencing token:server time ms" (integers in full decimal digits) on the
-- waiter's channel, so the waiter holds the lock without another round trip. Entries whose deadline
-- passed are dropped on the way. The releaser is remembered in the new holder's value ("prev"), or,
-- when the lock is freed, in the tombstone.
-- Cost: O(1) plus the dead entries dropped for the holder; O(queue length) for a waiter leaving.
-- #include next-fence.lua
-- #include fair-holder.lua
-- #include fair-queue.lua
local me = ARGV[1]

local holder = decode_holder(redis.call('get', KEYS[1]))
if holder and holder.token == me then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], holder, me, t, now, ARGV[2] == '1') then
    redis.call('del', KEYS[1])
    redis.call('set', KEYS[5], me, 'PX', 60000)
    if ARGV[3] and ARGV[3] ~= '' then
      local message = (ARGV[4] and ARGV[4] ~= '') and ARGV[4] or me
      redis.call('publish', ARGV[3], message)
    end
  end
  return 1
end
if holder and holder.prev == me then return 1 end
if redis.call('get', KEYS[5]) == me then return 1 end
leave_queue(KEYS[3], KEYS[4], me)
if not holder then
  -- A lock found free (its holder expired) with live waiters queued goes to the oldest of them.
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], nil, me, t, now, ARGV[2] == '1')
end
return 0

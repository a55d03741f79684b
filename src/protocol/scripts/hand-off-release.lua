-- hand-off-release: release a hand-off lock (Mutex, FairMutex) by handing it straight to the oldest
-- live waiter, or, while that waiter is younger than the Mutex's hand-off-after window, by freeing it
-- and waking that waiter; or leave its queue (a waiter that timed out or was aborted).
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the queue: a list of waiter entries, oldest first
-- KEYS[4] the waiting: a hash, queued token -> its current deadline ms (server time)
-- KEYS[5] the MultiMutex waiters stopped by this lock (a hash: token -> channel; multi-acquire.lua,
--         which also marks the holder's queue as not known to be empty, so this release takes the
--         slow path): a release that leaves the lock free publishes "token:free" to each (absent:
--         nobody is woken)
-- KEYS[6] the name's MultiMutex reservation (reservation.lua; absent: none is read). While a
--         MultiMutex waiter reserved the lock, its holder's release frees it for that waiter and
--         wakes it ("token:free" on its channel), handing it to no queued waiter, and a waiter
--         leaving the queue hands a free lock to nobody (multi-acquire.lua, starvation mode). A
--         reserved lock's holder never has "queue known empty": the fast path never reads this.
-- ARGV[1] the token that releases the lock, or whose queue entry is removed
-- ARGV[2] '1' to skip a waiter whose hand-off PUBLISH reached nobody (its process is gone; Mutex),
--         '0' to hand it the lock anyway (FairMutex: its place is kept even while its subscriber
--         reconnects; a crashed waiter costs at most its TTL)
-- ARGV[3] the hand-off-after window in ms ('0' or absent: always hand over, the FairMutex's): while
--         the oldest live waiter has waited less than this since its arrival, the release frees the
--         lock (the next caller, the releaser asking again or that waiter, takes it) and publishes
--         "token:free" on that waiter's channel, so it asks at once; it keeps its place and arrival.
--         With ARGV[2] '1', a waiter that wake reaches nobody is dropped and the next one looked at.
-- ARGV[4] '1' for a quiet release (the Mutex's): within the window it publishes nothing, and says so
--         (reply 2); the releasing client wakes that waiter a moment later, by this script with
--         another token and window '0' (a lock found free goes to the oldest live waiter), unless it
--         took the lock back first. '0' or absent: wake it now ("token:free").
-- ARGV[5] '1' when the lock's name may be a MultiMutex's too (the Mutex's): KEYS[5] and KEYS[6] are
--         read; '0' or absent (the FairMutex's, which shares no name with a MultiMutex): neither is,
--         so a contended hand-off pays no read of a reservation that cannot exist
-- Reply: 2 when this token held the lock and a quiet release freed it, leaving a live waiter not yet
--        due asleep; 1 when this token held the lock (it now belongs to the next live waiter, or is free when
--        none is left or the first is not yet due), or when this token is the one that released it
--        last and is not queued (a release re-sent after its reply was lost: it did release; nothing
--        changes); 0 when it did not, or is queued again (a call that gave back a hand-off and
--        waited on with the same token): its queue entry, if any, is removed; nothing else changes,
--        except that a lock found free with live waiters queued is handed to the oldest of them, or
--        wakes it.
-- A hand-off sets the lock to the waiter's token with the waiter's TTL, takes the next fencing token
-- and publishes "token:fencing token:server time ms" (integers in full decimal digits) on the
-- waiter's channel, so the waiter holds the lock without another round trip. Entries whose deadline
-- passed are dropped on the way. The releaser is remembered in the new holder's value ("prev"), or,
-- when the lock is freed, in the release left at the lock key (holder.lua), kept 60 s. A holder
-- nobody queued behind costs a GET and a SET: no clock, no queue.
-- The logic is include/release-or-leave.lua (the ReentrantMutex's script runs it too).
-- Cost: O(1) plus the dead entries dropped for the holder; O(queue length) for a waiter leaving.
-- A holder nobody queued behind is released before the queue's code is defined (see
-- hand-off-acquire.lua), as release_or_leave would release it.
-- #include holder.lua
local holder, released = decode_holder(redis.call('get', KEYS[1]))
if holder and holder.token == ARGV[1] and holder.queue_expiry == 0 then
  free_holder(KEYS[1], KEYS[2], holder, 0)
  return 1
end
-- #include server-time.lua
-- #include next-fence.lua
-- #include arrival-queue.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include release-or-leave.lua
-- #include reservation.lua
local multi_names = ARGV[5] == '1'
local reservation = multi_names and not (holder and holder.token ~= ARGV[1]) and read_reservation(KEYS[6])
if reservation then
  if holder then
    free_holder(KEYS[1], KEYS[2], holder, math.max(1, holder.queue_expiry))
    notify(reservation.channel, reservation.token .. ':free')
    local multi = redis.call('hgetall', KEYS[5])
    for i = 1, #multi, 2 do
      if multi[i] ~= reservation.token then notify(multi[i + 1], multi[i] .. ':free') end
    end
    return 1
  end
  -- Free and reserved: a waiter leaves the queue, and nobody is handed the lock (release_or_leave's
  -- reply for a token that does not hold it).
  local queue = arrival_queue(KEYS[3], KEYS[4])
  if not queue:leave(ARGV[1]) and released and released.prev == ARGV[1] then return 1 end
  return 0
end
local queue = arrival_queue(KEYS[3], KEYS[4], tonumber(ARGV[3] or '0'), ARGV[4] == '1')
local lock = hand_off_lock(KEYS[1], KEYS[2], queue, 1)
local reply, freed = release_or_leave(lock, holder, released, ARGV[1], ARGV[2] == '1')
if freed and multi_names then
  -- MultiMutex waiters stopped by this holder ask again once the lock is free (a hand-off to a
  -- waiter leaves it held: their hash is not read).
  local multi = redis.call('hgetall', KEYS[5])
  for i = 1, #multi, 2 do notify(multi[i + 1], multi[i] .. ':free') end
end
return reply

-- hand-off-acquire: take a hand-off lock (one holder; a release hands it straight to the next waiter
-- of its queue), or join (or renew a place in) its queue. A FairMutex serves the queue first, in
-- strict arrival order; a Mutex barges (ARGV[6]): it takes a free lock without serving the queue.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the queue: a list of waiter entries, oldest first (see arrival-queue.lua)
-- KEYS[4] the waiting: a hash, queued token -> its current deadline ms (server time)
-- KEYS[5] the lock's MultiMutex reservation (reservation.lua): while a MultiMutex waiter reserved
--         a free lock, nobody else takes it: the caller queues (or, with ARGV[3] 0, is refused) and
--         waits at most the reservation's time left; nobody queued is handed it here (the
--         reserver's release hands it on). Read only when the lock is free and its value does not
--         say "queue known empty" (a reservation marks it: multi-acquire.lua).
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long this waiter's queue place lives without being renewed, in ms; 0 for a single try
--         that never queues (tryAcquire)
-- ARGV[4] the channel this waiter hears its hand-off on
-- ARGV[5] '1' when an earlier attempt of this acquire call may have queued it, else '0' (it then
--         does not look for its entry when barging into a free lock)
-- ARGV[6] '1' to take a free lock whoever is queued (Mutex), '0' to serve the queue first (FairMutex)
-- ARGV[7] the holder label stored with the lock while this call holds it ('' for none; holder.lua)
-- ARGV[8] the server time in ms this acquire call first joined the queue, or '0' (or absent) when it
--         has not yet: a new entry of this call keeps it as its arrival (arrival-queue.lua), so a
--         call queued again after its entry was dropped keeps its age (a Mutex's release hands the
--         lock to a first waiter that old, handOffAfterMs); never later than now
-- Reply: {1, fencing token, server time ms} when acquired (now, or by an earlier hand-off: the TTL is
--        then restarted, so the caller may count it from when it sent this request);
--        {0, wait bound in ms, server time ms} when queued (or not taken, with ARGV[3] 0). The wait
--        bound is the longest the caller should wait before trying again: min(the holder's time
--        left, the shortest lease TTL a waiter queued since the lock was last free asked for),
--        since any waiter ahead may be handed the lock and crash, and the caller must be awake by
--        that lock's expiry to hand it on.
-- Cost: O(1); a caller barging into a free lock after an earlier attempt queued it leaves the
-- queue, O(queue length).
-- The lock goes to the caller only when it is free and no live waiter is ahead. When it is free and
-- a live waiter is ahead (the holder expired without a release), it is handed to that waiter here.
-- The logic is include/acquire-or-queue.lua (the ReentrantMutex's script runs it too).
-- The uncontended acquire returns before the queue's code is defined (each EVALSHA runs the whole
-- chunk, and defining the queue's functions costs about as much as taking a free lock): a free lock
-- whose last release found the queue empty, or any free lock for a barging caller no earlier attempt
-- queued, is the caller's, as acquire_or_queue would decide.
-- #include server-time.lua
-- #include next-fence.lua
-- #include holder.lua
-- #include take-free.lua
local now_us, now = server_time()
local holder, released = decode_holder(redis.call('get', KEYS[1]))
local queue_expiry = released and released.queue_expiry or 1
if not holder and ARGV[5] ~= '1' and queue_expiry == 0 then
  return take_free(KEYS[1], KEYS[2], 1, released, queue_expiry, ARGV[1], tonumber(ARGV[2]), ARGV[7] or '', now_us, now)
end
-- A free lock not known to have nobody behind: is it reserved (-2: no)?
local reserved_left = -2
if not holder and KEYS[5] then reserved_left = redis.call('pttl', KEYS[5]) end
if not holder and ARGV[5] ~= '1' and ARGV[6] == '1' and reserved_left == -2 then
  return take_free(KEYS[1], KEYS[2], 1, released, queue_expiry, ARGV[1], tonumber(ARGV[2]), ARGV[7] or '', now_us, now)
end
-- #include arrival-queue.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include acquire-or-queue.lua
local lock = hand_off_lock(KEYS[1], KEYS[2], arrival_queue(KEYS[3], KEYS[4]), 1)
if reserved_left ~= -2 then
  -- Reserved: queue (or renew the place), as behind a holder whose time left is the reservation's.
  local lifetime = tonumber(ARGV[3])
  if lifetime > 0 then
    local arrival = tonumber(ARGV[8] or '0')
    if arrival <= 0 or arrival > now then arrival = now end
    lock.queue:join(ARGV[1], now + lifetime, tonumber(ARGV[2]), ARGV[4], ARGV[7] or '', arrival)
    for _, key in ipairs({KEYS[3], KEYS[4]}) do
      if redis.call('pttl', key) < 2 * lifetime then redis.call('pexpire', key, 2 * lifetime) end
    end
  end
  return {0, math.max(0, reserved_left), now}
end
return acquire_or_queue(lock, holder, released, ARGV, ARGV[7] or '', now_us, now, tonumber(ARGV[8] or '0'))

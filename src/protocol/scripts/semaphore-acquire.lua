-- semaphore-acquire: take permits of a Semaphore in strict queue order (arrival, or a
-- RedlockSemaphore's places: ARGV[10]), or join (or renew a place in) its queue.
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- KEYS[2] the fencing counter (never expires, so tokens only grow)
-- KEYS[3] the queue: a list of waiter tokens, first served first
-- KEYS[4] the waiters: a hash, token -> its entry (include/semaphore-queue.lua: deadline, TTL, permits,
--         place, cap, channel, label)
-- KEYS[5] the limit stored by setLimit (absent: ARGV[4] is the limit)
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how many permits this acquisition takes, all or none
-- ARGV[4] the caller's `limit` option, in force when no limit is stored
-- ARGV[5] how long this waiter's queue entry lives without being renewed, in ms; 0 for a single try
--         that never queues (tryAcquire)
-- ARGV[6] the channel this waiter hears its hand-off on
-- ARGV[7] the holder label stored with the permits while this call holds them ('' for none)
-- KEYS[6] this token's release tombstone: the stamp of the latest of its releases this server ran
--         (the key semaphore-release.lua writes); read only with ARGV[8]
-- ARGV[8] this attempt's stamp, a RedlockSemaphore's: when its client sent it to this server
--         (redlock/call-stamp.ts: it only grows in one process, and a release is stamped as it goes
--         out to each server, so one sent to this server after this attempt has a higher one); ''
--         for none (a Semaphore's: one server, one connection in order; no tombstone is read)
-- ARGV[9] the fencing counter's step in microseconds (next-fence.lua): '1000000' for a
--         RedlockSemaphore's, whose servers' counters then move together, so a quorum usually hands
--         out one token and it needs no write-back; '' for microseconds (a Semaphore's)
-- ARGV[10] a RedlockSemaphore's: this acquire call's place, its client's wall clock in ms when the
--          call first joined (the same on every server): the queue is kept in the order of places
--          (semaphore-queue.lua's enqueue), so every server hands permits to the same waiter; ''
--          for arrival order (a Semaphore's)
-- ARGV[11] how long ago, in ms of the caller's monotonic clock, it took the place in ARGV[10]
-- ARGV[12] the tolerance in ms: a place further than this from when this server reckons it was
--          taken (its clock less ARGV[11]) is moved to that bound (as redlock-acquire.lua's)
-- ARGV[13] '1' when ARGV[4] caps a stored limit (a RedlockSemaphore's: its option is the quorum's
--          limit, and one stored on a server by a Semaphore's setLimit may only lower it); '' when
--          a stored limit replaces it (a Semaphore's)
-- Reply: {1, fencing token, server time ms} when acquired (now, or by an earlier hand-off whose
--        message may still be on its way: its TTL is then restarted, so the caller may count it from
--        when it sent this request);
--        {0, wait bound in ms, server time ms} when queued (or not taken, with ARGV[5] 0). The wait
--        bound is the longest the caller should wait before trying again: until the first holder's
--        expiry (a crashed holder frees its permits only then, and it is a waiter's attempt that
--        hands them on), and no longer than the shortest lease TTL among the other live waiters
--        (any of them may be handed permits and crash). -1 when nothing bounds it.
--        {-1, limit, server time ms} when ARGV[3] is more than the limit in force (lowered by
--        setLimit): the request could never be granted, and it leaves the queue.
--        {0, -1, server time ms} too, with nothing changed, when KEYS[6] shows this server ran a
--        release of this token sent after this attempt (a stamp above ARGV[8]): the attempt came
--        late (a client re-sent it after a reset connection, behind that release), and nobody would
--        hold what it took. The token's attempts sent after that release take as usual.
-- Permits go to the caller only when no live waiter is ahead of it (after the queue was served
-- with the free permits) and enough are free. Costs O(holders + waiters) when not acquired.
-- Enough permits free and nobody queued (the uncontended path) grants before the queue's code is
-- defined: every EVALSHA runs the whole chunk (as hand-off-acquire.lua does).
-- #include server-time.lua
-- #include next-fence.lua
-- #include semaphore-holders.lua
-- #include release-stamp.lua
local now_us, now = server_time()
local me, ttl, permits, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[7] or ''
local fence_step_us = tonumber(ARGV[9])

local holders = read_holders(KEYS[1], now, me)
if holders and holders.mine then
  hold_for(holders, holders.mine.member, ttl, now)
  return {1, holders.mine.fence, now}
end
if released_after(KEYS[6], ARGV[8]) then return {0, -1, now} end
local limit, head
if holders then
  -- The limit in force: the one setLimit stored, else the caller's. Read once.
  limit = tonumber(redis.call('get', KEYS[5]) or ARGV[4])
  if ARGV[13] == '1' then limit = math.min(limit, tonumber(ARGV[4])) end
  if permits <= limit - holders.held then
    head = redis.call('lindex', KEYS[3], 0)
  end
  if head == false then
    local fence = next_fence(KEYS[2], now_us, nil, fence_step_us)
    hold_for(holders, holder_member(permits, fence, label, me), ttl, now)
    return {1, fence, now}
  end
end
-- #include notify.lua
-- #include semaphore-queue.lua
local keys = {fence = KEYS[2], queue = KEYS[3], waiters = KEYS[4], fence_step_us = fence_step_us}

local bound
if holders then
  if permits > limit then
    leave_queue(keys, me)
    return {-1, limit, now}
  end
  -- Serving the queue hands on only free permits: with none free, it would change nothing (dead
  -- entries at the head are dropped by the next serve that can grant).
  if limit > holders.held then
    local at_head = serve(keys, holders, limit, now_us, now, me, head)
    if permits <= limit - holders.held and at_head ~= 'other' then
      if at_head == 'me' then leave_queue(keys, me) end
      return {1, grant(keys, holders, me, permits, ttl, label, now_us, now), now}
    end
  end
  bound = holders.first and math.max(0, holders.first - now) or -1
else
  bound = redis.call('pttl', KEYS[1])
end

-- The other live waiters' lease TTLs bound the wait; their latest deadline is how long the queue
-- keys must live already.
local waiters = redis.call('hgetall', keys.waiters)
local latest, queued = 0, nil
for i = 1, #waiters, 2 do
  local deadline, waiter_ttl = string.match(waiters[i + 1], '^(%d+)|(%d+)|')
  deadline, waiter_ttl = tonumber(deadline), tonumber(waiter_ttl)
  if waiters[i] == me then
    queued = decode_entry(waiters[i + 1])
  elseif waiter_ttl then
    if deadline > latest then latest = deadline end
    if deadline >= now and (bound < 0 or waiter_ttl < bound) then bound = waiter_ttl end
  end
end

local lifetime = tonumber(ARGV[5])
if lifetime > 0 then
  -- The place: kept while the entry is queued (its position in the queue says it), else the one
  -- sent, moved to within the tolerance of when this server reckons it was taken.
  local place = queued and queued.place
  if not place and ARGV[10] ~= '' then
    local taken_at, tolerance = now - tonumber(ARGV[11]), tonumber(ARGV[12])
    place = math.min(math.max(tonumber(ARGV[10]), taken_at - tolerance), taken_at + tolerance)
  end
  local cap = ARGV[13] == '1' and tonumber(ARGV[4]) or 0
  local entry = queue_entry(now + lifetime, ttl, permits, ARGV[6], label, place or 0, cap)
  local created = redis.call('hset', keys.waiters, me, entry) == 1
    and enqueue(keys, me, ARGV[10] ~= '' and place or nil, waiters) == 1
  -- The queue keys outlive their longest-lived entry, by at most one lifetime more: an abandoned
  -- queue goes away. Their TTL is set only when it must grow, to twice this entry's lifetime, so
  -- the entries that follow within a lifetime find it long enough. Both keys get the same TTL, so
  -- the queue's tells both's, except when this write created one (no other entry, or empty list).
  if #waiters == 0 or created or redis.call('pttl', keys.queue) < lifetime then
    local keep = math.max(2 * lifetime, latest - now)
    for _, key in ipairs({keys.queue, keys.waiters}) do redis.call('pexpire', key, keep) end
  end
end
return {0, bound, now}

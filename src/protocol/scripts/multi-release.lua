-- multi-release: release every name a MultiMutex holds, or unregister a waiter that gave up (and drop
-- its reservations). Each name is released as a Mutex's (the holder branch of release-or-leave.lua):
-- handed straight to its oldest live Mutex waiter, or freed; a name another MultiMutex waiter
-- reserved is freed, never handed to a Mutex waiter (multi-acquire.lua, starvation mode). Each name
-- left free wakes its MultiMutex waiters and its reserver ("token:free" on each one's channel, once
-- per waiter however many of its names this release frees). A name a waiter giving up had reserved,
-- found free, goes to its oldest live Mutex waiter, or wakes its MultiMutex waiters.
-- Six keys per name, in the acquirer's order, as multi-acquire.lua takes them.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the Mutex's queue: a list of waiter entries, oldest first
-- KEYS[4] the Mutex's waiting hash: queued token -> its current deadline ms (server time)
-- KEYS[5] the MultiMutex waiters of the name: a hash, waiter token -> its channel
-- KEYS[6] the name's reservation (reservation.lua)
-- ARGV[1] the token that releases the names, or whose registrations are removed
-- Reply: 1 when this token held every name (now released), or released them last (a release re-sent
--        after its reply was lost); 0 otherwise: the names it still held are released all the same,
--        its registrations are removed.
-- Cost: O(names) plus each name's hand-off, plus O(MultiMutex waiters) of each name left free; a
-- name nobody queued, registered or reserved behind costs a GET and a SET (its reservation key is
-- not read: reservation.lua).
-- #include holder.lua
-- #include server-time.lua
-- #include next-fence.lua
-- #include arrival-queue.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include reservation.lua
local me = ARGV[1]
local n = #KEYS / 6
local all = true
local now_us, now
-- A waiter registered on several of the names freed is woken once: each wake is an attempt.
local woken = {}
local function wake_waiters(waiters_key)
  local waiters = redis.call('hgetall', waiters_key)
  for j = 1, #waiters, 2 do
    if waiters[j] == me then
      -- Its first attempt re-sent by the client after registering (ARGV[6] of multi-acquire.lua).
      redis.call('hdel', waiters_key, me)
    elseif not woken[waiters[j]] then
      woken[waiters[j]] = true
      notify(waiters[j + 1], waiters[j] .. ':free')
    end
  end
end
for i = 1, n do
  local base = (i - 1) * 6
  local lock_key, waiters_key = KEYS[base + 1], KEYS[base + 5]
  local holder, released = decode_holder(redis.call('get', lock_key))
  if holder and holder.token == me then
    -- The holder is registered on none of its names (the acquire that took them unregistered it; a
    -- leftover of a re-sent first attempt is dropped below).
    -- A holder nobody queued or registered behind (queue expiry 0: a MultiMutex registration or
    -- reservation marks it "not known", multi-acquire.lua) is freed without the clock, the queue or
    -- the waiters.
    local queue_expiry, handed = holder.queue_expiry, false
    local reservation = queue_expiry > 0 and read_reservation(KEYS[base + 6])
    if reservation then
      -- Reserved: freed for its reserver, woken here; no Mutex waiter is handed it.
      if not woken[reservation.token] then
        woken[reservation.token] = true
        notify(reservation.channel, reservation.token .. ':free')
      end
    elseif queue_expiry > 0 then
      if not now_us then now_us, now = server_time() end
      local lock = hand_off_lock(lock_key, KEYS[base + 2], arrival_queue(KEYS[base + 3], KEYS[base + 4], 0, false), 1)
      local next_holder, emptied = grant_next_waiter(lock, holder, me, me, now_us, now, true)
      if next_holder then handed = true elseif emptied then queue_expiry = 0 end
    end
    if not handed then
      free_holder(lock_key, KEYS[base + 2], holder, queue_expiry)
      if holder.queue_expiry > 0 then wake_waiters(waiters_key) end
    end
  else
    redis.call('hdel', waiters_key, me)
    if not (released and released.prev == me) and not (holder and holder.prev == me) then all = false end
    local reservation = read_reservation(KEYS[base + 6])
    if reservation and reservation.token == me then
      -- A reserver giving up: what its reservation kept back from others goes on now.
      redis.call('del', KEYS[base + 6])
      if not holder then
        if not now_us then now_us, now = server_time() end
        local lock = hand_off_lock(lock_key, KEYS[base + 2], arrival_queue(KEYS[base + 3], KEYS[base + 4], 0, false), 1)
        if not grant_next_waiter(lock, released, me, released and released.prev or '', now_us, now, true) then
          wake_waiters(waiters_key)
        end
      end
    end
  end
end
return all and 1 or 0

-- semaphore-release: give back a Semaphore acquisition's permits, handing them straight to the
-- waiters at the head of the queue; or leave the queue (a waiter that timed out or was aborted).
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- KEYS[2] the fencing counter
-- KEYS[3] the queue: a list of waiter tokens, first served first
-- KEYS[4] the waiters: a hash, token -> its entry (include/semaphore-queue.lua)
-- KEYS[5] the limit stored by setLimit (absent: ARGV[2] is the limit)
-- KEYS[6] the release tombstone: the last token that released here, kept 60 s
-- ARGV[1] the owner token that releases its permits, or whose queue entry is removed
-- ARGV[2] the caller's `limit` option, in force when no limit is stored
-- KEYS[7] this token's release tombstone: the stamp of the latest of its releases this server ran,
--         read by semaphore-acquire.lua's KEYS[6]; written only with ARGV[3]
-- ARGV[3] this release's stamp, a RedlockSemaphore's: when its client sent it (redlock/call-stamp.ts);
--         '' for none (a Semaphore's: no tombstone is written)
-- ARGV[4] how long the tombstone is kept, in ms: the lease TTL, an attempt's validity ('' for none)
-- ARGV[5] the fencing counter's step in microseconds for the permits handed on: '1000000' for a
--         RedlockSemaphore's, '' for microseconds (semaphore-acquire.lua's ARGV[9])
-- ARGV[6] '1' when ARGV[2] caps a stored limit, '' when a stored limit replaces it
--         (semaphore-acquire.lua's ARGV[13])
-- Reply: 1 when this token held permits (they now belong to the next waiters that fit, or are
--        free), or when this token is the one that released last (a release re-sent after its reply
--        was lost: it did release); 0 when it did not. Either way a token not holding leaves the
--        queue (the same acquire call may have queued again with that token after a give-back), and
--        permits found free with live waiters queued are handed to them.
-- Holders above a lowered limit keep their permits until they release; a release then hands on
-- only what the limit leaves free.
-- A holder nobody queued behind is released before the queue's code is defined (every EVALSHA runs
-- the whole chunk).
-- #include server-time.lua
-- #include next-fence.lua
-- #include semaphore-holders.lua
-- #include release-stamp.lua
local now_us, now = server_time()
local me = ARGV[1]
note_release(KEYS[7], ARGV[3], ARGV[4])

local holders = read_holders(KEYS[1], now, me)
local head
if holders and holders.mine then
  redis.call('zrem', KEYS[1], holders.mine.member)
  holders.held = holders.held - holders.mine.permits
  if holders.held == 0 then
    -- It was the last holder: the sorted set is gone, and permits handed on below make a new one,
    -- whose expiry must then be set whatever this holder's was (hold_for sets it only past `last`:
    -- else a key without TTL, left for good once its holder is gone).
    holders.last, holders.first = 0, nil
  end
  redis.call('set', KEYS[6], me, 'PX', 60000)
  head = redis.call('lindex', KEYS[3], 0)
  if not head then return 1 end
end
-- #include notify.lua
-- #include semaphore-queue.lua
local keys = {
  fence = KEYS[2], queue = KEYS[3], waiters = KEYS[4], fence_step_us = tonumber(ARGV[5]),
}
-- The limit matters only to hand permits on: read it only when someone waits.
local function limit()
  local stored = tonumber(redis.call('get', KEYS[5]) or ARGV[2])
  return ARGV[6] == '1' and math.min(stored, tonumber(ARGV[2])) or stored
end

if not holders then
  -- Another kind's key holds every permit: nothing to give back or hand on, but a waiter giving up
  -- still leaves the queue.
  leave_queue(keys, me)
  return 0
end
if holders.mine then
  serve(keys, holders, limit, now_us, now, '', head)
  return 1
end
-- Read before leaving the queue, and never a reason to skip it: a call that gave back a grant too
-- late to use queues again with the same token, and its last give-back then finds itself the last
-- releaser. Answered 1 without leaving, it stayed queued, and a later release handed it permits
-- nobody held until their TTL (the fault suite's key-left-behind, issue 39).
local released_last = redis.call('get', KEYS[6]) == me
leave_queue(keys, me)
serve(keys, holders, limit, now_us, now, '')
return released_last and 1 or 0

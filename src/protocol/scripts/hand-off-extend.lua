-- hand-off-extend: compare-and-extend a hand-off lock's lease (Mutex, FairMutex, a RedlockMutex's
-- server), and optionally reserve fencing tokens for the holder's own process to hand out (a local
-- batch: the process passes the lock among its own callers, each with its own token). Never
-- re-creates a lock that expired.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter (read and written only when ARGV[3] > 0)
-- ARGV[1] the owner token that must hold the lock
-- ARGV[2] the new TTL in milliseconds, counted from now
-- ARGV[3] how many fencing tokens to reserve (0: none)
-- Reply: without a reservation, 1 when extended; with one, the highest reserved token (the
-- reserved ones are the ARGV[3] tokens up to it, all above every token granted so far). 0 when the
-- lock is not held by this token (nothing is changed), or (reserving) its value is not ours to
-- parse.
-- The holder's value records its expiry (for the waiters' wait bound) and its fencing token (the
-- next grant starts above it, without reading the counter), so it is written again rather than
-- only PEXPIREd; a reservation raises both to the top.
-- #include server-time.lua
-- #include holder.lua
local holder = decode_holder(redis.call('get', KEYS[1]))
if not holder or holder.token ~= ARGV[1] then return 0 end
local reserve = tonumber(ARGV[3])
if not holder.expiry then
  if reserve > 0 then return 0 end
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
local _, now = server_time()
holder.expiry = now + tonumber(ARGV[2])
if reserve > 0 then
  local counter = tonumber(redis.call('get', KEYS[2]) or '0')
  holder.fence = math.max(holder.fence, counter) + reserve
  redis.call('set', KEYS[2], string.format('%d', holder.fence))
end
store_holder(KEYS[1], holder, now)
if reserve > 0 then return holder.fence end
return 1

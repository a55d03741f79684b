-- hand-off-extend: compare-and-extend a hand-off lock's lease (Mutex, FairMutex, a RedlockMutex's
-- server). Never re-creates a lock that expired.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- ARGV[1] the owner token that must hold the lock
-- ARGV[2] the new TTL in milliseconds, counted from now
-- Reply: 1 when extended; 0 when the lock is not held by this token (nothing is changed).
-- The holder's value records its expiry (for the waiters' wait bound), so it is written again with
-- the new one rather than only PEXPIREd.
-- #include server-time.lua
-- #include holder.lua
local holder = decode_holder(redis.call('get', KEYS[1]))
if not holder or holder.token ~= ARGV[1] then return 0 end
if not holder.expiry then return redis.call('pexpire', KEYS[1], ARGV[2]) end
local _, now = server_time()
holder.expiry = now + tonumber(ARGV[2])
store_holder(KEYS[1], holder, now)
return 1

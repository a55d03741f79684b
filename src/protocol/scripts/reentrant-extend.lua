-- reentrant-extend: compare-and-extend one hold of a ReentrantMutex: the lock, with every hold of its
-- owner, lives at least the new TTL from now. Never re-creates a lock that expired.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the holds: a hash of the holder's other hold tokens (see reentrant-holds.lua)
-- ARGV[1] the hold token that must hold the lock
-- ARGV[2] the new TTL in milliseconds, counted from now
-- Reply: 1 when extended; 0 when this token is not a hold of the lock (nothing is changed).
-- The expiry is never moved earlier: another hold's lease counts on the one it bought (a lease that
-- asked for less only believes it has less).
-- #include server-time.lua
-- #include holder.lua
-- #include reentrant-holds.lua
local holder = decode_holder(redis.call('get', KEYS[1]))
if not is_hold(holder, KEYS[2], ARGV[1]) then return 0 end
local _, now = server_time()
keep_until(KEYS[1], KEYS[2], holder, tonumber(ARGV[2]), now)
return 1

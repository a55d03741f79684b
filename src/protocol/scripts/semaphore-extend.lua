-- semaphore-extend: compare-and-extend one acquisition of a Semaphore. Never re-creates a holder
-- that expired.
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- ARGV[1] the owner token that must hold permits
-- ARGV[2] the new TTL in milliseconds, counted from now (server time)
-- Reply: 1 when extended; 0 when this token holds no permits (nothing is changed).
-- #include server-time.lua
-- #include semaphore-holders.lua
local _, now = server_time()
local holders = read_holders(KEYS[1], now, ARGV[1])
if not holders or not holders.mine then return 0 end
hold_for(holders, holders.mine.member, tonumber(ARGV[2]), now)
return 1

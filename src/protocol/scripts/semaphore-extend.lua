-- semaphore-extend: compare-and-extend one acquisition of a Semaphore, and optionally reserve
-- fencing tokens for the holder's own process to hand out (a local batch: the process passes the
-- permit among its own callers, each with its own token). Never re-creates a holder that expired.
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- KEYS[2] the fencing counter (read and written only when ARGV[3] > 0)
-- ARGV[1] the owner token that must hold permits
-- ARGV[2] the new TTL in milliseconds, counted from now (server time)
-- ARGV[3] how many fencing tokens to reserve (0: none)
-- Reply: without a reservation, 1 when extended; with one, the highest reserved token (the
-- reserved ones are the ARGV[3] tokens up to it, all above every token granted or reserved so far,
-- and at least the server time in microseconds, as next_fence grants). 0 when this token holds no
-- permits (nothing is changed).
-- The holder's member keeps the fencing token it was granted: the reserved tokens are handed out by
-- the process, and the counter alone says they are taken (every grant starts above it).
-- #include server-time.lua
-- #include next-fence.lua
-- #include semaphore-holders.lua
local now_us, now = server_time()
local holders = read_holders(KEYS[1], now, ARGV[1])
if not holders or not holders.mine then return 0 end
hold_for(holders, holders.mine.member, tonumber(ARGV[2]), now)
local reserve = tonumber(ARGV[3])
if reserve <= 0 then return 1 end
-- The first reserved token is the one the next grant would have had; the counter skips the rest.
local last = next_fence(KEYS[2], now_us) + reserve - 1
if reserve > 1 then redis.call('set', KEYS[2], string.format('%d', last)) end
return last

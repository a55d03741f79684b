-- semaphore-set-limit: change a Semaphore's limit at run time (an operator's call), and hand the
-- permits a raised limit frees to the waiters at the head of the queue.
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- KEYS[2] the fencing counter
-- KEYS[3] the queue: a list of waiter tokens, first served first
-- KEYS[4] the waiters: a hash, token -> its entry (include/semaphore-queue.lua)
-- KEYS[5] the stored limit (no expiry: it outlives every holder, and overrides every caller's
--         `limit` option from now on)
-- ARGV[1] the new limit, a positive integer
-- Reply: the permits held now. Holders above a lowered limit keep theirs until they release: none
-- is taken back, and nothing is granted until the permits held are below the new limit. Queued
-- requests above a lowered limit are dropped, and each waiter is told at once ("token:over:limit"
-- on its channel).
-- #include server-time.lua
-- #include next-fence.lua
-- #include semaphore-holders.lua
-- #include notify.lua
-- #include semaphore-queue.lua
local now_us, now = server_time()
local keys = {fence = KEYS[2], queue = KEYS[3], waiters = KEYS[4]}
redis.call('set', KEYS[5], ARGV[1])
drop_over_limit(keys, tonumber(ARGV[1]))
local holders = read_holders(KEYS[1], now, '')
if not holders then return 0 end
serve(keys, holders, tonumber(ARGV[1]), now_us, now, '')
return holders.held

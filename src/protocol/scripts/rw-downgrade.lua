-- rw-downgrade: turn the writer of a ReadWriteLock into one of its readers, in one step, so no other
-- writer can take the lock in between; the readers queued at the head of the queue are let in.
-- A read-write lock is a Semaphore's holders and queue (include/semaphore-holders.lua): a writer
-- holds every permit (`limit`), a reader one.
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- KEYS[2] the fencing counter
-- KEYS[3] the queue: a list of waiter tokens, first served first
-- KEYS[4] the waiters: a hash, token -> its entry (include/semaphore-queue.lua)
-- ARGV[1] the owner token of the write lease
-- ARGV[2] the lock's limit: the permits a writer holds
-- Reply: 1 when this token held the write lock and now holds a read lock (the same lease: same
--        token, fencing token and expiry); 0 when it did not hold the write lock (nothing changes).
-- #include server-time.lua
-- #include next-fence.lua
-- #include semaphore-holders.lua
-- #include notify.lua
-- #include semaphore-queue.lua
local now_us, now = server_time()
local limit = tonumber(ARGV[2])
local holders = read_holders(KEYS[1], now, ARGV[1])
if not holders or not holders.mine or holders.mine.permits ~= limit then return 0 end
local mine = holders.mine
local expiry = redis.call('zscore', KEYS[1], mine.member)
redis.call('zrem', KEYS[1], mine.member)
redis.call('zadd', KEYS[1], expiry, holder_member(1, mine.fence, mine.label, ARGV[1]))
holders.held = holders.held - mine.permits + 1
serve({fence = KEYS[2], queue = KEYS[3], waiters = KEYS[4]}, holders, limit, now_us, now, '')
return 1

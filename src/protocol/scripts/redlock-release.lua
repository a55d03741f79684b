-- redlock-release: one server's part of releasing a RedlockMutex: hand the lock straight to the
-- first live waiter of the line, or leave the line (a waiter that gives up). It is hand-off-release.lua
-- over placed-line.lua (see redlock-acquire.lua).
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the line: a sorted set, waiting token -> its place
-- KEYS[4] the waiting: a hash, waiting token -> "deadline ms|lease TTL ms|#channel|channel"
-- ARGV[1] the token that releases the lock, or whose place in the line is removed
-- ARGV[2] '1' to skip a waiter whose hand-off PUBLISH reached nobody, '0' to hand it the lock anyway
-- ARGV[3] the hand-off-after window in ms: while the first waiter's place is younger than this, the
--         release frees the lock instead of handing it over (0: always hand over)
-- ARGV[4] the caller's wall clock in ms, the same on every server (see redlock-acquire.lua)
-- ARGV[5] the tolerance in ms: ARGV[4] further than this from this server's clock is moved to that
--         bound (redlock-acquire.lua's ARGV[11]), so a releaser whose clock is off delays a due
--         waiter by at most this much
-- KEYS[5] this token's release tombstone, read by redlock-acquire.lua's KEYS[5]; written only with
--         ARGV[6]
-- ARGV[6] this release's stamp: when its client sent it (redlock/call-stamp.ts); '' for none
-- ARGV[7] how long the tombstone is kept, in ms: the lease TTL, an attempt's validity ('' for none)
-- Reply: as hand-off-release.lua's: 1 when this token held the lock (it now belongs to the next live
--        waiter, or is free), or released it last; 0 when it did not (its place is removed).
-- A hand-off publishes "token:fencing token:server time ms" on the waiter's channel.
-- Cost: O(log line length), plus the dead entries dropped.
-- #include server-time.lua
-- #include holder.lua
-- #include release-stamp.lua
note_release(KEYS[5], ARGV[6], ARGV[7])
local holder, released = decode_holder(redis.call('get', KEYS[1]))
-- A holder nobody lined up behind: released before the line's code is defined (as in
-- hand-off-release.lua), as release_or_leave would release it.
if holder and holder.token == ARGV[1] and holder.queue_expiry == 0 then
  free_holder(KEYS[1], KEYS[2], holder, 0)
  return 1
end
-- #include next-fence.lua
-- #include placed-line.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include release-or-leave.lua
local line = placed_line(KEYS[3], KEYS[4], nil, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
local lock = hand_off_lock(KEYS[1], KEYS[2], line, 1000000)
return release_or_leave(lock, holder, released, ARGV[1], ARGV[2] == '1')

-- redlock-acquire: one server's part of a RedlockMutex attempt: take the lock in the line's order,
-- or join (or renew a place in) the line. It is hand-off-acquire.lua over placed-line.lua: every
-- server of the quorum orders its waiters by the place each brings (ARGV[7]), so all of them hand
-- a release to the same waiter, and a contended lock moves from holder to holder without split
-- votes.
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the line: a sorted set, waiting token -> its place (see placed-line.lua)
-- KEYS[4] the waiting: a hash, waiting token -> "deadline ms|lease TTL ms|#channel|channel"
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long this waiter's place lives without being renewed, in ms; 0 for a single try
--         that never joins the line (tryAcquire)
-- ARGV[4] the channel this waiter hears its hand-off on (one per client and server)
-- ARGV[5] '1' when an earlier attempt of this acquire call may have put it in the line, else '0'
-- ARGV[6] '1' to take a free lock whoever is in line, '0' to serve the line first
-- ARGV[7] this acquire call's place in the line: its client's wall clock in ms when the call
--         first joined, the same on every server (ties go to the lower token)
-- ARGV[8] the hand-off-after window in ms: while the first waiter's place is younger than this, a
--         caller new to the line (ARGV[5] '0') takes a free lock ahead of it (0: never)
-- ARGV[9] the caller's wall clock in ms, the same on every server (the first waiter's place is
--         measured against it, so the servers agree on whether it is due; moved to within ARGV[11]
--         of this server's clock, as the place is)
-- ARGV[10] how long ago, in ms of the caller's monotonic clock, it took the place in ARGV[7]
-- ARGV[11] the tolerance in ms: a place further than this from when this server reckons it was
--          taken (its clock less ARGV[10]) is moved to that bound, so a caller whose wall clock is
--          off moves in the line by at most this much (the place of a clock that is right, one
--          request's latency late, is kept as sent: the same number on every server); ARGV[9] too
-- ARGV[12] the holder label stored with the lock while this call holds it ('' for none; holder.lua)
-- KEYS[5] this token's release tombstone: the stamp of the latest of its releases this server ran
--         (redlock-release.lua's KEYS[5]); read only with ARGV[13]
-- ARGV[13] this attempt's stamp: when its client sent it to this server (redlock/call-stamp.ts: it
--          only grows in one process, and a release is stamped as it goes out to each server, so
--          one sent to this server after this attempt has a higher one); '' for none
-- Reply: as hand-off-acquire.lua's: {1, fencing token, server time ms} when acquired (now, or by an
--        earlier hand-off, whose TTL is then restarted); {0, wait bound in ms, server time ms}; and
--        {0, -1, server time ms}, nothing changed, when KEYS[5] shows this server ran a release of
--        this token sent after this attempt (a stamp above ARGV[13]) and the token does not hold the
--        lock: the attempt came late (a client re-sent it after a reset connection, behind that
--        release), and nobody would hold what it took.
-- Fencing tokens step over whole seconds of server time rather than microseconds (next-fence.lua):
-- the servers' counters then move together, one per grant, and the highest token of a quorum is
-- usually already on a quorum. Tokens still only grow, and a server that lost its counter starts
-- again above every token handed out more than a second before.
-- Cost: O(log line length).
-- #include server-time.lua
-- #include next-fence.lua
-- #include holder.lua
-- #include take-free.lua
-- #include release-stamp.lua
local now_us, now = server_time()
local holder, released = decode_holder(redis.call('get', KEYS[1]))
if not (holder and holder.token == ARGV[1]) and released_after(KEYS[5], ARGV[13]) then
  return {0, -1, now}
end
-- The uncontended acquire, before the line's code is defined (as in hand-off-acquire.lua): a lock
-- whose last release found the line empty is the caller's, as acquire_or_queue would decide.
if not holder and ARGV[5] ~= '1' and released and released.queue_expiry == 0 then
  return take_free(KEYS[1], KEYS[2], 1000000, released, 0, ARGV[1], tonumber(ARGV[2]), ARGV[12] or '', now_us, now)
end
-- #include placed-line.lua
-- #include notify.lua
-- #include grant-waiter.lua
-- #include acquire-or-queue.lua
local taken_at, tolerance = now - tonumber(ARGV[10]), tonumber(ARGV[11])
local place = string.format('%d',
  math.min(math.max(tonumber(ARGV[7]), taken_at - tolerance), taken_at + tolerance))
local line = placed_line(KEYS[3], KEYS[4], place, tonumber(ARGV[8]), tonumber(ARGV[9]), tolerance)
local lock = hand_off_lock(KEYS[1], KEYS[2], line, 1000000)
return acquire_or_queue(lock, holder, released, ARGV, ARGV[12] or '', now_us, now)

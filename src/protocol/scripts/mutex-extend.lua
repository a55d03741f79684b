-- mutex-extend: compare-and-pexpire. Never re-creates a lock that expired.
-- KEYS[1] the lock key
-- ARGV[1] the owner token that must hold the lock
-- ARGV[2] the new TTL in milliseconds, counted from now
-- Reply: 1 when extended; 0 when the lock is not held by this token (nothing is changed).
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0

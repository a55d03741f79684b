-- mutex-acquire: take a free lock with a lease and hand out the next fencing token.
-- KEYS[1] the lock key (holds the owner token while locked)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- Reply: {1, fencing token} when acquired; {0, remaining PTTL of the holder in ms} when not.
-- An attempt whose reply was lost and that is sent again finds its own token: it is acquired, with
-- the TTL restarted and the fencing token it was given, so a lost reply never makes a client wait
-- for its own lock to expire.
local owner = redis.call('get', KEYS[1])
if not owner then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1, redis.call('incr', KEYS[2])}
end
if owner == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('get', KEYS[2]) or '0')}
end
return {0, redis.call('pttl', KEYS[1])}

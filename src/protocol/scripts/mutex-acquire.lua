-- mutex-acquire: take a free lock with a lease and hand out the next fencing token; when it is
-- taken, register the caller as a sleeper that a release will wake (one sleeper per release).
-- KEYS[1] the lock key (holds the owner token while locked)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the sleepers: a sorted set of "token|wake channel", scored by the entry's deadline
--         (server time, ms); entries past their deadline are dropped when met
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long the sleeper entry lives, in ms; 0 never registers (a single try)
-- ARGV[4] the channel this caller is woken on
-- ARGV[5] '1' when an earlier attempt of this acquisition may have registered it, else '0'
-- Reply: {1, fencing token} when acquired; {0, remaining PTTL of the holder in ms} when not.
-- An attempt whose reply was lost and that is sent again finds its own token: it is acquired, with
-- the TTL restarted and the fencing token it was given, so a lost reply never makes a client wait
-- for its own lock to expire.
local owner = redis.call('get', KEYS[1])
if not owner then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if ARGV[5] == '1' then redis.call('zrem', KEYS[3], ARGV[1] .. '|' .. ARGV[4]) end
  return {1, redis.call('incr', KEYS[2])}
end
if owner == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('get', KEYS[2]) or '0')}
end
local lifetime = tonumber(ARGV[3])
if lifetime > 0 then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('zadd', KEYS[3], now + lifetime, ARGV[1] .. '|' .. ARGV[4])
  -- The set outlives its longest-lived entry, and no longer: an abandoned set goes away.
  if redis.call('pttl', KEYS[3]) < lifetime then redis.call('pexpire', KEYS[3], lifetime) end
end
return {0, redis.call('pttl', KEYS[1])}

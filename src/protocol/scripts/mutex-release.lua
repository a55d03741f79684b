-- mutex-release: compare-and-delete, then wake the waiters.
-- KEYS[1] the lock key
-- ARGV[1] the owner token that must hold the lock
-- ARGV[2] the release channel to publish on (waiters subscribe to it before they try)
-- Reply: 1 when this token held the lock and it is now free; 0 when it was not held by this token
--        (expired, or taken over), in which case nothing is changed.
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', ARGV[2], 'released')
  return 1
end
return 0

-- server-check: does this server run what Locksmith's scripts need (Redis 5 or later: ZPOPMIN, and
-- TIME before writes)? Changes nothing. Run once per client before its first script.
-- KEYS[1] a key of ours that holds no sorted set (ZPOPMIN on it pops nothing; any other type only
--         makes it answer WRONGTYPE, which still proves the command exists)
-- Reply: {1, server version or '' before Redis 7} when supported; {0, the server's error} when
--        ZPOPMIN is missing (Redis < 5). Any other error (an ACL refusing the key) is raised as is.
local version = redis.REDIS_VERSION or ''
local probe = redis.pcall('zpopmin', KEYS[1])
if type(probe) == 'table' and probe.err then
  if string.find(string.lower(probe.err), 'unknown', 1, true) then return {0, probe.err} end
  if not string.find(probe.err, 'WRONGTYPE', 1, true) then return redis.error_reply(probe.err) end
end
return {1, version}

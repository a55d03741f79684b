-- notify: publishes a message on a waiter's channel the way that waiter listens.
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: notify(channel, message) -> how many subscribers it reached; or, when that is not known,
-- the server's error (a table: redis.pcall) when refused (an ACL user without channel permissions;
-- SPUBLISH before Redis 7), or nil (below). The callers treat "not known" as reached, never as
-- "nobody".
-- The channel says how its waiter listens (protocol/keys.ts): a channel whose last segment (the
-- client id, after the last ':') starts with 's' belongs to a cluster client, whose waiters listen
-- with SSUBSCRIBE on the lock's shard, and gets SPUBLISH; any other gets PUBLISH. The channel shares
-- the lock's hash tag, so SPUBLISH stays in the script's slot. Either counts only the subscribers
-- connected to the node that runs the script, while the shard's replicas deliver an SPUBLISH to
-- theirs too: a waiter whose subscriber is connected to a replica (node-redis 4 and 5 keep a
-- shard's subscriber on its old address after a failover) hears a message the count leaves out.
-- So an SPUBLISH that counted nobody says nothing: a Mutex that skipped its waiter as gone, while
-- that waiter took the hand-off it heard, made two holders (test/integration/cluster.test.ts).
local function notify(channel, message)
  if string.find(channel, ':s[^:]*$') then
    local reached = redis.pcall('spublish', channel, message)
    if reached == 0 then return nil end
    return reached
  end
  return redis.pcall('publish', channel, message)
end

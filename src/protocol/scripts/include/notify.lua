-- notify: publishes a message on a waiter's channel the way that waiter listens.
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: notify(channel, message) -> how many subscribers it reached, or the server's error (a
-- table: redis.pcall) when refused (an ACL user without channel permissions; SPUBLISH before
-- Redis 7), which the callers treat as "not known", never as "nobody".
-- The channel says how its waiter listens (protocol/keys.ts): a channel whose last segment (the
-- client id, after the last ':') starts with 's' belongs to a cluster client, whose waiters listen
-- with SSUBSCRIBE on the lock's shard, and gets SPUBLISH, which counts the subscribers of that
-- shard; any other gets PUBLISH. In a cluster, PUBLISH would count only the subscribers connected
-- to this node, so a Mutex would skip a waiter listening on another as gone. The channel shares
-- the lock's hash tag, so SPUBLISH stays in the script's slot.
local function notify(channel, message)
  if string.find(channel, ':s[^:]*$') then
    return redis.pcall('spublish', channel, message)
  end
  return redis.pcall('publish', channel, message)
end

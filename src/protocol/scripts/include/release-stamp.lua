-- release-stamp: a Redlock kind's release tombstone for one token (issue 39): the stamp of the
-- latest release of that token this server ran (redlock/call-stamp.ts), so an attempt of the token
-- sent before that release, that reaches the server after it (a client re-sent it after a reset
-- connection), takes nothing.
-- Needs: nothing; reads no KEYS or ARGV: the script passes them.
-- Provides: note_release(key, stamp, keep_ms) and released_after(key, stamp), below. `stamp` ''
-- (a single-server kind's call) reads and writes nothing.

-- Records a release stamped `stamp` at `key`, kept `keep_ms`; the latest release's stamp stays (one
-- re-sent late changes nothing). Called first, whatever the release finds: one that finds nothing
-- may have overtaken an attempt of its token.
local function note_release(key, stamp, keep_ms)
  if stamp == '' then return end
  local latest = redis.call('get', key)
  if not latest or tonumber(stamp) > tonumber(latest) then
    redis.call('set', key, stamp, 'PX', keep_ms)
  end
end

-- Whether this server ran a release of the token stamped after an attempt stamped `stamp`.
local function released_after(key, stamp)
  if stamp == '' then return false end
  local latest = redis.call('get', key)
  return latest ~= false and tonumber(latest) > tonumber(stamp)
end

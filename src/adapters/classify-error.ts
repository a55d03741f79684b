import { ClientClosedError, LockError, RedisCommandError } from '../errors.js';
import type { RedisDriver } from './driver.js';

/**
 * Server error codes a retry cannot fix: the same command would fail the same way (a script or
 * argument error, a wrong key type, missing ACL permissions or credentials, a cluster redirection
 * a single-server client cannot follow). Everything else the server says (LOADING, BUSY, TRYAGAIN,
 * MASTERDOWN, READONLY during a failover, OOM until memory frees up, ...) may pass.
 */
const PERMANENT_SERVER_ERROR =
  /^(ERR|WRONGTYPE|NOPERM|WRONGPASS|NOAUTH|NOSCRIPT|EXECABORT|NOPROTO|CROSSSLOT|MOVED|ASK)\b/;

/**
 * Error replies no EVAL or EVALSHA can get: another command's, paired with ours by a client whose
 * connection is out of step (node-redis 5 after a reconnect to Redis before 7.2 handed the error of
 * its own `CLIENT SETINFO` handshake to a script call in flight). Never a refusal of our command.
 */
const ANOTHER_COMMANDS_REPLY = /^(ERR unknown subcommand|NOPROTO)\b/i;

/**
 * `ERR` errors that are about the moment, not the command: too many clients, or a WAIT that reached
 * a node that is a replica now (a cluster client whose slot map is behind a failover).
 */
const TRANSIENT_ERR = /^ERR (max number of clients reached|WAIT cannot be used with replica instances)/;

/**
 * Turns a rejection from a client into what it means for Locksmith: a `LockError` for anything a
 * retry cannot fix (the client is closed; the server refused the command), or the error itself for
 * a connectivity problem that may pass (connection refused or reset, an offline client without an
 * offline queue, ioredis' retries-per-request limit, a server loading or busy).
 */
export function classifyRedisError(driver: RedisDriver, error: unknown): unknown {
  if (error instanceof LockError) return error;
  // Whatever the client's own wording ("Connection is closed.", "The client is closed",
  // "Disconnects client"), a command that failed because the client is now closed for good is
  // not a connectivity problem.
  const closed = driver.closedReason();
  if (closed !== undefined) return new ClientClosedError(closed, { cause: error });
  if (error instanceof Error && ANOTHER_COMMANDS_REPLY.test(error.message)) {
    // Reported as a failure that may pass (the call is retried, or ends in RedisUnavailableError),
    // never as the server's verdict on our command.
    return new Error(
      `The client answered a Locksmith command with another command's reply: ${error.message}`,
      {
        cause: error,
      },
    );
  }
  if (
    error instanceof Error &&
    PERMANENT_SERVER_ERROR.test(error.message) &&
    !TRANSIENT_ERR.test(error.message)
  ) {
    return new RedisCommandError(`Redis refused a Locksmith command: ${error.message}`, { cause: error });
  }
  return error;
}

/**
 * Whether an error from running a script might go away on a retry. `runScript` rejects with a
 * `LockError` for everything that cannot (closed client, refused command, unexpected reply, old
 * server), so this is exactly "not a LockError".
 */
export function isTransientRedisError(error: unknown): boolean {
  return !(error instanceof LockError);
}

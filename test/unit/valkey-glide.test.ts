/**
 * The Valkey GLIDE adapter without a server: GLIDE's rewording of server errors is read back to the
 * server's codes (so the NOSCRIPT fallback and the error classification work as for the other
 * clients), and detection tells GLIDE's standalone and cluster clients apart and refuses one that
 * cannot subscribe after creation (before GLIDE 2.3). Against real servers: the lock contract,
 * cluster.test.ts, trust-clients.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifyRedisError } from '../../src/adapters/classify-error.js';
import { createDriver } from '../../src/adapters/detect.js';
import { serverWording } from '../../src/adapters/valkey-glide.js';
import { RedisCommandError, UnsupportedClientError } from '../../src/errors.js';

/** A GLIDE error as GLIDE 2.5.2 words it (messages seen against Redis 7.0). */
function glideError(message: string, name = 'RequestError'): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

describe('serverWording', () => {
  test('the kinds GLIDE renames are read back to the server codes, with the GLIDE error as cause', () => {
    const cases: [string, string][] = [
      [
        'An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.',
        'NOSCRIPT No matching script. Please use EVAL.',
      ],
      ['An error was signalled by the server: - ResponseError: bad thing', 'ERR bad thing'],
      ['An error was signalled by the server: - PermissionDenied: no perm', 'NOPERM no perm'],
      ['An error was signalled by the server: - BusyLoadingError: loading', 'LOADING loading'],
      ['An error was signalled by the server: - ReadOnly: ro', 'READONLY ro'],
      ['An error was signalled by the server: - TryAgain: t', 'TRYAGAIN t'],
      ['An error was signalled by the server: - Moved: 1 127.0.0.1:1', 'MOVED 1 127.0.0.1:1'],
      [
        'WRONGTYPE: Operation against a key holding the wrong kind of value',
        'WRONGTYPE Operation against a key holding the wrong kind of value',
      ],
      ['NOPROTO: p', 'NOPROTO p'],
      ['OOM: command not allowed', 'OOM command not allowed'],
    ];
    for (const [glide, server] of cases) {
      const original = glideError(glide);
      const read = serverWording(original) as Error;
      assert.equal(read.message, server);
      assert.equal(read.cause, original);
    }
  });

  test('what is not a server error reply stays as GLIDE reported it', () => {
    for (const error of [
      glideError('timed out', 'TimeoutError'),
      glideError(
        'Unable to execute requests; the client is closed. Please create a new client.',
        'ClosingError',
      ),
      glideError('Standalone connect failed - IoError: Received error for address `127.0.0.1:1`: timed out'),
      glideError('An error was signalled by the server: - SomethingNew: x'),
    ]) {
      assert.equal(serverWording(error), error);
    }
    assert.equal(serverWording('not an error'), 'not an error');
  });

  test('a refusal read back is classified as the server refusing the command', () => {
    const open = createDriver(fakeGlide({ cluster: false }));
    const refused = serverWording(glideError('WRONGTYPE: Operation against a key'));
    assert.ok(classifyRedisError(open, refused) instanceof RedisCommandError);
    const timedOut = glideError('timed out', 'TimeoutError');
    assert.equal(classifyRedisError(open, serverWording(timedOut)), timedOut);
  });
});

/** An object with the members detection reads, as GLIDE 2.5 (or before 2.3: no dynamic pub/sub). */
function fakeGlide({ cluster, dynamicPubSub = true }: { cluster: boolean; dynamicPubSub?: boolean }): object {
  const nothing = () => Promise.resolve(null);
  return {
    customCommand: nothing,
    invokeScript: nothing,
    getPubSubMessage: nothing,
    close: () => {},
    isClosed: false,
    ...(cluster ? { invokeScriptWithRoute: nothing } : {}),
    ...(dynamicPubSub ? (cluster ? { ssubscribe: nothing } : { subscribe: nothing }) : {}),
  };
}

describe('detection', () => {
  test('a GlideClient is a standalone driver, a GlideClusterClient a cluster one', () => {
    const standalone = createDriver(fakeGlide({ cluster: false }));
    assert.equal(standalone.kind, 'valkey-glide');
    assert.equal(standalone.topology, 'standalone');
    const cluster = createDriver(fakeGlide({ cluster: true }));
    assert.equal(cluster.kind, 'valkey-glide');
    assert.equal(cluster.topology, 'cluster');
  });

  test('a client without subscribe() after creation (GLIDE before 2.3) is refused, nothing sent', () => {
    for (const cluster of [false, true]) {
      assert.throws(
        () => createDriver(fakeGlide({ cluster, dynamicPubSub: false })),
        (error: unknown) =>
          error instanceof UnsupportedClientError && /GLIDE before 2\.3/.test(error.message),
      );
    }
  });

  test('a closed client says so without a round trip', () => {
    const client = { ...fakeGlide({ cluster: false }), isClosed: true };
    assert.match(String(createDriver(client).closedReason()), /GLIDE client was closed/);
    assert.equal(createDriver(fakeGlide({ cluster: false })).closedReason(), undefined);
  });
});

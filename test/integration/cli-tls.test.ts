/**
 * The `locksmith` command over TLS: a real redis-server with a TLS port and a certificate signed by
 * a CA made here with openssl. With the CA given (`--tls-ca`) and `rediss://`, the command runs and
 * reads the lock; without the CA, the server's certificate is refused in one line, non-zero; at the
 * server's plain port, the message says the server may not speak TLS.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, type RedisServer, startRedis } from '../../tools/redis-server.js';
import { cli, killAllCli } from '../fixtures/cli.js';

const EXIT_UNAVAILABLE = 69;

/** A CA, and a certificate for 127.0.0.1 it signed, in `dir`. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=locksmith test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
  );
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=127.0.0.1',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
  );
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1\\n' > '${file('san.ext')}'`]);
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    file('san.ext'),
    '-out',
    file('server.pem'),
  );
  return { ca: file('ca.pem'), cert: file('server.pem'), key: file('server.key') };
}

describe('locksmith over TLS (rediss://, --tls-ca)', () => {
  let dir: string;
  let server: RedisServer;
  let tlsUrl: string;
  let ca: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'locksmith-tls-'));
    const files = makeCertificates(dir);
    ca = files.ca;
    const tlsPort = await freePort();
    server = await startRedis({
      args: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        files.cert,
        '--tls-key-file',
        files.key,
        '--tls-ca-cert-file',
        files.ca,
        '--tls-auth-clients',
        'no',
      ],
    });
    tlsUrl = `rediss://127.0.0.1:${tlsPort}`;
  });
  after(async () => {
    killAllCli();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('with the CA, run takes the lock over TLS and status reads it', async () => {
    const run = cli([
      'run',
      'tls-job',
      '--redis',
      tlsUrl,
      '--tls-ca',
      ca,
      '--',
      'sh',
      '-c',
      'echo "$LOCKSMITH_NAME"',
    ]);
    assert.equal(await run.exited, 0, run.stderr);
    assert.equal(run.stdout, 'tls-job\n');
    const status = cli(['status', 'tls-job', '--json', '--redis', tlsUrl, '--tls-ca', ca]);
    assert.equal(await status.exited, 0, status.stderr);
    assert.equal(JSON.parse(status.stdout).locked, false);
  });

  test('without the CA, the certificate is refused: one line, non-zero', async () => {
    const status = cli(['status', 'tls-job', '--redis', tlsUrl]);
    assert.equal(await status.exited, EXIT_UNAVAILABLE, status.stderr);
    assert.match(status.stderr, /^locksmith: [^\n]+\n$/);
    assert.match(status.stderr, /certificate/i);
  });

  test('rediss:// at a plain port: exit 69, with a hint that the server may not speak TLS', async () => {
    // The same server's plain port (server.url): a TLS greeting there gets no reply.
    const plain = server.url.replace('redis://', 'rediss://');
    const status = cli(['status', 'tls-job', '--redis', plain, '--tls-ca', ca, '--timeout', '1s']);
    assert.equal(await status.exited, EXIT_UNAVAILABLE, status.stderr);
    assert.match(status.stderr, /^locksmith: [^\n]+\n$/);
    assert.match(status.stderr, /if the server at that port does not speak TLS, use redis:\/\//);
  });
});

/** Every embedded script is what its .lua file says, and its SHA1 is what SCRIPT LOAD returns. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { scripts } from '../../src/protocol/scripts.js';
import { type RedisServer, startRedis } from '../../tools/redis-server.js';

const dir = join(import.meta.dirname, '../../src/protocol/scripts');

/** What Redis receives for a .lua file: each `-- #include x.lua` line replaced by include/x.lua. */
function expanded(source: string): string {
  return source.replace(/^-- #include ([\w-]+\.lua)\n/gm, (_, file: string) =>
    readFileSync(join(dir, 'include', file), 'utf8'),
  );
}
let server: RedisServer;

before(async () => {
  server = await startRedis();
});

after(async () => {
  await server.stop();
});

test('every .lua file is registered, with a header naming KEYS, ARGV and the reply', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.lua'));
  const registered = Object.values(scripts).map((s) => `${s.name}.lua`);
  assert.deepEqual([...registered].sort(), [...files].sort());
  for (const script of Object.values(scripts)) {
    const file = readFileSync(join(dir, `${script.name}.lua`), 'utf8');
    const source = expanded(file);
    assert.equal(script.source, source, `${script.name}: embedded copy is current (npm run embed-lua)`);
    assert.ok(
      script.checked.source.includes(source),
      `${script.name}: checked, inside its call-nonce envelope`,
    );
    assert.doesNotMatch(source, /#include/, `${script.name}: every include is expanded`);
    assert.match(source, /^-- [\w-]+: /, `${script.name}: header line`);
    assert.match(source, /-- Reply:/, `${script.name}: documents its reply`);
    for (let k = 1; k <= script.keyCount; k += 1) {
      assert.match(source, new RegExp(`-- KEYS\\[${k}\\]`), `${script.name}: documents KEYS[${k}]`);
    }
    assert.doesNotMatch(source, new RegExp(`KEYS\\[${script.keyCount + 1}\\]`), `${script.name}: key count`);
  }
});

test('the shared fence fragment is in every script that grants the lock, written once', () => {
  const fragment = readFileSync(join(dir, 'include/next-fence.lua'), 'utf8');
  for (const script of [scripts.handOffAcquire, scripts.handOffRelease, scripts.semaphoreAcquire]) {
    assert.ok(script.source.includes(fragment), `${script.name} includes next-fence.lua`);
    assert.doesNotMatch(script.source, /'incr'/, `${script.name}: no other way to take a token`);
  }
});

test('every SHA1 is what SCRIPT LOAD returns', async () => {
  for (const text of Object.values(scripts).flatMap((script) => [script, script.checked])) {
    const reply = await server.command('SCRIPT', 'LOAD', text.source);
    assert.equal(reply.split('\r\n')[1], text.sha1);
  }
});

test('raise-fence raises a counter to a floor and never lowers it, and says whether it raised it', async () => {
  const key = 'locksmith:{raise}:fence';
  const lock = 'locksmith:{raise}';
  // The reply {raised, counter} as 'raised counter'.
  const run = async (floor: string) => {
    const reply = await server.command('EVAL', scripts.raiseFence.source, '2', key, lock, floor);
    const [raised, counter] = reply.split('\r\n').slice(1, 3);
    return `${raised?.slice(1)} ${counter?.slice(1)}`;
  };
  assert.equal(await run('7'), '1 7', 'a missing counter is raised');
  assert.equal((await server.command('GET', key)).split('\r\n')[1], '7');
  assert.equal(await run('3'), '0 7', 'a lower floor changes nothing');
  assert.equal(await run('7'), '0 7', 'nor does the same value: it was not this call that raised it');
  assert.equal(await run('6000000000000123'), '1 6000000000000123', 'exact above 2^52');
  assert.equal((await server.command('GET', key)).split('\r\n')[1], '6000000000000123');
  // A held lock records its holder's token, and a release hands the next one out from it (grant-waiter.lua):
  // it is raised with the counter, or that hand-off would lower the counter again.
  const expiry = Date.now() + 10_000;
  await server.command('SET', lock, `6000000000000200|${expiry}|0|0|0|0|owner`, 'PX', '10000');
  assert.equal(await run('6000000000000300'), '1 6000000000000300');
  assert.match(await server.command('GET', lock), /6000000000000300\|\d+\|0\|0\|0\|0\|owner/);
  assert.ok(Number((await server.command('PTTL', lock)).slice(1)) > 9_000, 'the holder keeps its expiry');
  // A free lock's key keeps the release that freed it, with the counter's value, which the next
  // acquire takes its token from (acquire-or-queue.lua): it is raised too.
  await server.command('SET', lock, '6000000000000300|0|0|0|3|0|old', 'PX', '60000');
  assert.equal(await run('6000000000000400'), '1 6000000000000400');
  assert.match(await server.command('GET', lock), /6000000000000400\|0\|0\|0\|3\|0\|old/);
});

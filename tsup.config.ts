import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Peer clients are never bundled: users bring their own ioredis or node-redis.
  external: ['ioredis', 'redis', '@redis/client'],
});

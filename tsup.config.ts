import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  // `@internal` declarations (adapter, script and lease internals) stay out of the published
  // .d.ts files: users get the API, not the machinery, and it can change without a major version.
  dts: { compilerOptions: { stripInternal: true } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  // Peer clients are never bundled: users bring their own ioredis or node-redis.
  external: ['ioredis', 'redis', '@redis/client'],
});

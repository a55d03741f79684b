import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  // `@internal` declarations (adapter, script and lease internals) stay out of the published
  // .d.ts files: users get the API, not the machinery, and it can change without a major version.
  dts: { compilerOptions: { stripInternal: true } },
  // No source maps: they would point at src/, which is not shipped (1 MB of the 390 kB tarball was
  // maps). The JavaScript is not minified, so a stack trace reads as it is.
  sourcemap: false,
  clean: true,
  target: 'node20',
  // Peer clients are never bundled: users bring their own ioredis or node-redis.
  external: ['ioredis', 'redis', '@redis/client'],
});

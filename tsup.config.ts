import { defineConfig } from 'tsup';

// Peer clients are never bundled: users bring their own ioredis, node-redis or Valkey GLIDE.
const clients = ['ioredis', 'iovalkey', 'redis', '@redis/client', '@valkey/valkey-glide'];

export default defineConfig([
  {
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
    external: clients,
  },
  {
    // The `locksmith` command (package.json `bin`): ESM only, its shebang kept from src/cli/main.ts.
    // It imports the library by the package's own name, so dist/cli.js uses dist/index.js rather
    // than a second copy of it (and only its public API).
    entry: { cli: 'src/cli/main.ts' },
    format: ['esm'],
    dts: false,
    sourcemap: false,
    clean: false,
    target: 'node20',
    external: [...clients, 'redis-locksmith'],
  },
]);

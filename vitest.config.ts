import { defineConfig } from 'vitest/config';

// One run covers unit, integration (real Postgres and Redis) and end-to-end (sandbox over HTTP/SSE) tests.
// Every file creates its own database / Redis prefix, so files run in parallel safely.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fresh-clone test runs `npm test` inside a clone; that nested run leaves it out to not recurse.
    exclude: [
      'test/faults/**',
      ...(process.env.VALIDIC_SYNC_IN_CLONE_TEST ? ['test/e2e/fresh-clone.test.ts'] : []),
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});

import { defineConfig } from 'vitest/config';

// One run covers unit, integration (real Postgres and Redis) and end-to-end (sandbox over HTTP/SSE) tests.
// Every file creates its own database / Redis prefix, so files run in parallel safely.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/faults/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});

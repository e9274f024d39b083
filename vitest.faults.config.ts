import { defineConfig } from 'vitest/config';

// The fault suite (`npm run test:faults`): kills, cuts and storms on purpose, each run checked against
// the sandbox's truth. Slower than `npm test`, so it has its own command; it prints one line of counts
// per fault kind (test/faults/fault-counts-reporter.ts) before the usual summary line.
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Every fault file has its own PostgreSQL or Redis when it kills one (private-postgres.ts,
    // private-redis.ts), so two files run at once; one at a time took 711 s in CI.
    maxWorkers: 2,
    globalSetup: ['./test/faults/global-setup.ts'],
    reporters: ['default', './test/faults/fault-counts-reporter.ts', './test/helpers/summary-reporter.ts'],
  },
});

import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/helpers/slow-first-sequencer.ts';

const FRESH_CLONE = 'test/e2e/fresh-clone.test.ts';

// One run covers unit, integration (real Postgres and Redis) and end-to-end (sandbox over HTTP/SSE) tests.
// Every file creates its own database / Redis prefix, so files run in parallel safely.
// The fresh-clone test runs `npm ci` and the demo inside a clone: it runs alone, after every other file
// (its own project, a later group), so its install does not compete with the suite.
export default defineConfig({
  test: {
    // A guard against a hang, not a speed limit (a test's waits name their own steps and limits): in
    // repeated runs of the e2e files, three at a time beside a CPU-bound process, tests that take 20–40 s
    // on an idle machine (audit, backfill, status on the embedded warehouse) ran past 60 s.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most files wait on child processes, HTTP and the database rather than compute: one worker (what this
    // Vitest chose on a 2-core machine) left the cores idle and took 750 s in CI; three took 379 s here
    // with the same 850 tests passing.
    maxWorkers: 3,
    // Without the cache of a previous run (CI's fresh clone), the slow end-to-end files start first.
    sequence: { sequencer: SlowFirstSequencer },
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: ['test/faults/**', FRESH_CLONE],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'fresh-clone', include: [FRESH_CLONE], sequence: { groupOrder: 1 } },
      },
    ],
  },
});

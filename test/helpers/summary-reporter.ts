/**
 * Prints the run's wall time (`tests took N s`, so CI's log shows each suite's duration) and then its
 * counts as one plain last line, `N passed, M failed[, K skipped]`, so any tool (CI included) can read
 * the result without knowing vitest's output format.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  readonly #startedAt = Date.now();

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load has no tests but must count as a failure.
      if (module.state() === 'failed' && module.children.size === 0) failed++;
    }
    failed += unhandledErrors.length;
    const seconds = Math.round((Date.now() - this.#startedAt) / 1000);
    process.stdout.write(`\ntests took ${seconds} s\n`);
    process.stdout.write(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}

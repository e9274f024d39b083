/**
 * Prints one line per fault kind after the fault suite:
 * `fault <kind>: runs <n>, records <n>, missing <n>, duplicated <n>, regressed <n>`,
 * and fails the run when any of the three counts is not zero (the scenarios assert it too).
 */
import type { Reporter } from 'vitest/node';
import { FAULT_RESULTS_ENV, formatFaultLine, readFaultTotals } from './fault-results.ts';

export default class FaultCountsReporter implements Reporter {
  onTestRunEnd(): void {
    const dir = process.env[FAULT_RESULTS_ENV];
    if (!dir) return;
    const totals = readFaultTotals(dir);
    const lines = [...totals].map(([kind, t]) => formatFaultLine(kind, t));
    process.stdout.write(`\n${lines.join('\n')}\n`);
    if ([...totals.values()].some((t) => t.missing + t.duplicated + t.regressed > 0)) process.exitCode = 1;
  }
}

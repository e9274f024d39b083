/**
 * Fault-suite bookkeeping: every scenario run appends its oracle counts for its fault kind to a file in
 * a directory shared by the whole `npm run test:faults` run (made by global-setup.ts); the reporter
 * (fault-counts-reporter.ts) sums them per kind and prints the lines test/faults/README.md quotes.
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    faultResultsDir: string;
  }
}

export const FAULT_RESULTS_ENV = 'VALIDIC_FAULT_RESULTS_DIR';

export interface RunCounts {
  /** Records (plus users and connection events) the truth holds and the run had to land. */
  records: number;
  /** In the truth, absent from the warehouse (records, users, connection events). */
  missing: number;
  /** Keys stored more than once, or records the truth does not know. */
  duplicated: number;
  /** Stored at a version (checksum or deletion) that is not the truth's current one. */
  regressed: number;
}

export interface KindTotals extends RunCounts {
  runs: number;
}

export function recordFaultRun(kind: string, counts: RunCounts): void {
  const dir = inject('faultResultsDir');
  appendFileSync(join(dir, `${kind}.jsonl`), `${JSON.stringify(counts)}\n`);
}

export function readFaultTotals(dir: string): Map<string, KindTotals> {
  const totals = new Map<string, KindTotals>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()) {
    const kind = file.slice(0, -'.jsonl'.length);
    const sum: KindTotals = { runs: 0, records: 0, missing: 0, duplicated: 0, regressed: 0 };
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const run = JSON.parse(line) as RunCounts;
      sum.runs++;
      sum.records += run.records;
      sum.missing += run.missing;
      sum.duplicated += run.duplicated;
      sum.regressed += run.regressed;
    }
    totals.set(kind, sum);
  }
  return totals;
}

export function formatFaultLine(kind: string, t: KindTotals): string {
  return `fault ${kind}: runs ${t.runs}, records ${t.records}, missing ${t.missing}, duplicated ${t.duplicated}, regressed ${t.regressed}`;
}

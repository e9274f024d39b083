/**
 * The one output format of every bench: `bench <name>: <value> (target <target>) ok|short`, then the raw
 * numbers the figure came from on indented lines, so a reader can recompute it. `run-all.ts` collects
 * the `bench …` lines; the indented ones are kept in RESULTS.md as the evidence.
 */

export interface Figure {
  name: string;
  /** The measured value, already rounded for display. */
  value: number;
  /** Unit or suffix shown after the value ('' for a bare ratio). */
  unit?: string;
  /** Human form of the target, e.g. '≥ 0.6' or '0.85–0.98'. */
  target: string;
  ok: boolean;
  /** Raw numbers behind the figure, one indented line each. */
  raw?: Record<string, unknown>;
}

export function formatFigure(figure: Figure): string {
  const value = `${figure.value}${figure.unit ? ` ${figure.unit}` : ''}`;
  const lines = [`bench ${figure.name}: ${value} (target ${figure.target}) ${figure.ok ? 'ok' : 'short'}`];
  for (const [key, raw] of Object.entries(figure.raw ?? {})) {
    lines.push(`    ${key}: ${typeof raw === 'string' ? raw : JSON.stringify(raw)}`);
  }
  return lines.join('\n');
}

export function printFigure(figure: Figure): void {
  console.log(formatFigure(figure));
}

/** Rounds to `digits` decimals for display (the raw lines keep more). */
export const round = (value: number, digits = 2): number => Number(value.toFixed(digits));

/** `--quick`: smaller sizes for a fast check (run-all passes it on). */
export const quick = process.argv.includes('--quick');

/** Seconds since `started` (a `process.hrtime.bigint()` reading). */
export function secondsSince(started: bigint): number {
  return Number(process.hrtime.bigint() - started) / 1e9;
}

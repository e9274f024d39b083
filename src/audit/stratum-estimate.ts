/**
 * The scheduled audit's estimate of one stratum (pure): from the cells its ticks audited over a span, the
 * sample the exact interval is taken on (README.md, "The estimate and its interval").
 *
 * - The unit is the stratum's cell: user × resource in the recent stratum (its days move with today, the
 *   cell does not), user × resource × grid window in the history stratum. A cell audited twice in the span
 *   is one cell of the sample, as it is one cell of the population.
 * - A cell counts by its first audit in the span that found it synced: each tick draws a simple random
 *   sample of the stratum, so the distinct cells of the span, given how many they are, are a simple random
 *   sample too (every set of that size is as likely); the first look is the one the sync alone is judged
 *   by, since the audit repairs what it finds and a later look would see its own repair.
 * - A cell none of whose audits found it synced (no sync had reached its days yet) is not judged: the
 *   sample is then one of the synced cells, whose number the population is scaled to (N × synced ÷ drawn).
 *
 * `warehouse/audits.ts` (`stratumSample`) computes the same three counts in SQL; a test holds the two to
 * the same answer.
 */
import type { AuditCell, StratumSample } from '../warehouse/audits.ts';
import { type CompletenessEstimate, estimateCompleteness } from './completeness-interval.ts';

/** What a scheduled cell's audit found: judged complete or drift, or not yet synced (not judged). */
export type ScheduledOutcome = 'complete' | 'drift' | 'unsynced';

/** The stratum's unit: `uid|resource` (recent), `uid|resource|start_date` (history and a command's cells). */
export function stratumCellKey(cell: Pick<AuditCell, 'uid' | 'resource' | 'startDate' | 'stratum'>): string {
  return cell.stratum === 'recent'
    ? `${cell.uid}|${cell.resource}`
    : `${cell.uid}|${cell.resource}|${cell.startDate}`;
}

/** The sample of a span's audits of one stratum, given in the order they were audited. */
export function summarizeStratum(
  audits: Iterable<{ key: string | number; outcome: ScheduledOutcome }>,
): StratumSample {
  const first = new Map<string | number, ScheduledOutcome>();
  for (const { key, outcome } of audits) {
    const seen = first.get(key);
    if (seen === undefined || seen === 'unsynced') first.set(key, outcome);
  }
  const sample: StratumSample = { sampled: 0, complete: 0, unsynced: 0 };
  for (const outcome of first.values()) {
    if (outcome === 'unsynced') sample.unsynced++;
    else {
      sample.sampled++;
      if (outcome === 'complete') sample.complete++;
    }
  }
  return sample;
}

/**
 * The stratum's estimate and its exact 95 % interval: of `population` cells, the synced share (as drawn)
 * is the population the judged cells were sampled from. Null when no cell was judged.
 */
export function estimateStratum(
  sample: StratumSample,
  population: number,
  confidence = 0.95,
): CompletenessEstimate | null {
  if (sample.sampled === 0) return null;
  const synced = Math.round((population * sample.sampled) / (sample.sampled + sample.unsynced));
  return estimateCompleteness(sample.complete, sample.sampled, Math.max(synced, sample.sampled), confidence);
}

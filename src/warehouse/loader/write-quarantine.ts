/**
 * Quarantine rows for the items normalization rejected: one row per distinct (org, kind, raw) with
 * the latest reason; seeing the same item again bumps seen_count and last_seen_at. Also the
 * informational entries of records that load with points left out (kind `bad_points`) or with metrics
 * and fields left out (kind `bad_values`).
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { NormalizedRecord, QuarantineEntry } from '../../normalize/normalized-types.ts';
import type { Batch, LoadResult } from '../../pipeline/batch.ts';
import { bump } from '../../pipeline/batch.ts';
import type { WarehouseTransaction } from '../open-warehouse.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** PostgreSQL text cannot hold NUL; quarantine keeps such raw text with the NUL spelled out. */
const storableText = (text: string) => text.replaceAll('\u0000', '\\u0000');

/** Parts named in one informational reason; the count says how many more there are. */
const NAMED_PARTS = 10;

const named = (parts: readonly string[]) =>
  `${parts.slice(0, NAMED_PARTS).join('; ')}${parts.length > NAMED_PARTS ? `; and ${parts.length - NAMED_PARTS} more` : ''}`;

/** The informational entry of a record loaded without some of its series points: raw stays whole. */
export function badPointsNote(n: NormalizedRecord): QuarantineEntry {
  const { badPoints, record } = n;
  return {
    kind: 'bad_points',
    reason: `${record.type} record loaded without ${badPoints.length} bad point(s) (intraday_series.bad_points): ${named(badPoints)}`,
    raw: record.raw,
  };
}

/**
 * The informational entry of a record, v2 or legacy, loaded without the metrics or field values it
 * could not read (left out, or null): raw stays whole.
 */
export function badValuesNote(type: string, badValues: readonly string[], raw: string): QuarantineEntry {
  return {
    kind: 'bad_values',
    reason: `${type} record loaded without ${badValues.length} unreadable value(s): ${named(badValues)}`,
    raw,
  };
}

export async function writeQuarantine(
  tx: WarehouseTransaction,
  batch: Batch,
  entries: QuarantineEntry[],
  result: LoadResult,
  /** counted: false for informational entries, whose item loaded (it is not counted as quarantined). */
  { counted = true }: { counted?: boolean } = {},
): Promise<void> {
  if (entries.length === 0) return;
  // The same bad item twice in one batch is one row seen twice (ON CONFLICT cannot touch a row twice).
  const distinct = new Map<string, { entry: QuarantineEntry; hash: string; seen: number }>();
  for (const entry of entries) {
    if (counted) bump(result, entry.kind, 'quarantined');
    const hash = sha256(entry.raw);
    const key = `${entry.kind}\u0001${hash}`;
    const known = distinct.get(key);
    if (known) known.seen += 1;
    else distinct.set(key, { entry, hash, seen: 1 });
  }
  // In key order: concurrent loads (they lock only their record keys) quarantining the same items
  // then wait for each other instead of deadlocking.
  const rows = [...distinct.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
  for (let i = 0; i < rows.length; i += 1000) {
    await tx.db
      .insertInto('validic_sync.quarantine')
      .values(
        rows.slice(i, i + 1000).map(({ entry, hash, seen }) => ({
          org_id: batch.orgId,
          arrived_via: batch.arrivedVia,
          kind: entry.kind,
          reason: storableText(entry.reason),
          raw: storableText(entry.raw),
          raw_sha256: hash,
          seen_count: seen,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['org_id', 'kind', 'raw_sha256']).doUpdateSet({
          reason: (eb) => eb.ref('excluded.reason'),
          last_seen_at: sql`now()`,
          seen_count: sql`validic_sync.quarantine.seen_count + excluded.seen_count`,
        }),
      )
      .execute();
  }
}

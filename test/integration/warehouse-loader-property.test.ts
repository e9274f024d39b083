/**
 * Property: any order and repetition of a set of record versions, split into any batches, leaves the
 * warehouse exactly as loading only the newest version of each id once; and record_versions holds every
 * other distinct version (id, checksum, created_at, deleted or not), whatever the order.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Batch } from '../../src/pipeline/batch.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { metric, rawRecord } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

const TYPES = ['measurement', 'nutrition', 'intraday', 'sleep'] as const;

interface Version {
  id: string;
  type: (typeof TYPES)[number];
  checksum: string;
  createdAt: string;
  deleted: boolean;
  seed: number;
}

function rawOf(v: Version): Record<string, unknown> {
  const common = rawRecord(v.type, {
    id: v.id,
    checksum: v.checksum,
    start_time: '2024-05-01T00:00:00Z',
    end_time: '2024-05-01T23:59:59Z',
    utc_offset: 3600,
    offset_origin: 'profile',
    created_at: v.createdAt,
    deleted_at: v.deleted ? v.createdAt : null,
  });
  const metricOf = (type: string, k: number) => metric(type, v.seed * 10 + k);
  switch (v.type) {
    case 'measurement':
      return { ...common, metrics: Array.from({ length: 1 + (v.seed % 3) }, (_, k) => metricOf(`m${k}`, k)) };
    case 'nutrition':
      return {
        ...common,
        name: `meal ${v.seed}`,
        category: 'meal',
        metrics: [metricOf('energy_consumed', 0)],
        segments: Array.from({ length: v.seed % 3 }, (_, s) => ({
          name: `seg${s}`,
          metrics: [metricOf('fat', s)],
          food: Array.from({ length: 1 + ((v.seed + s) % 2) }, (_, f) => ({
            name: `food${f}`,
            brand: '',
            metrics: [metricOf('protein', f)],
            serving: { amount: v.seed + f, unit_name: 'g' },
          })),
        })),
      };
    case 'intraday':
      return {
        ...common,
        granularity: { interval: 15, unit: 'minutes' },
        metrics: Array.from({ length: 1 + (v.seed % 2) }, (_, k) => ({
          type: `steps${k}`,
          unit: 'steps',
          origin: 'device',
          data_points: Array.from({ length: 1 + (v.seed % 4) }, (_, p) => ({
            time: `2024-05-01T0${p}:00:00Z`,
            value: k % 2 === 0 ? v.seed + p : String(v.seed + p),
          })),
        })),
      };
    default:
      return {
        ...common,
        metrics: [metricOf('sleep_duration', 0)],
        stages: [{ stage: 'rem', seconds: v.seed }],
      };
  }
}

/**
 * A set of ids, each with 1–4 distinct versions; created_at values may tie, and one checksum may come
 * at several times and with or without deleted_at (a delete that keeps the checksum, a revival).
 */
const versionSet = fc
  .array(
    fc.record({
      type: fc.constantFrom(...TYPES),
      versions: fc.uniqueArray(
        fc.record({
          checksum: fc.constantFrom('a', 'b', 'c'),
          day: fc.integer({ min: 1, max: 3 }),
          deleted: fc.boolean(),
          seed: fc.nat(40),
        }),
        { minLength: 1, maxLength: 4, selector: (v) => `${v.checksum}/${v.day}/${v.deleted}` },
      ),
    }),
    { minLength: 1, maxLength: 4 },
  )
  .map((ids) =>
    ids.flatMap((rec, i) =>
      rec.versions.map(
        (v): Version => ({
          id: `rec-${i}`,
          type: rec.type,
          checksum: `${v.checksum}${i}`,
          createdAt: `2024-05-0${v.day}T12:00:00Z`,
          deleted: v.deleted,
          seed: v.seed,
        }),
      ),
    ),
  );

const scenario = versionSet.chain((versions) =>
  fc
    .tuple(
      fc.array(fc.integer({ min: 1, max: 3 }), { minLength: versions.length, maxLength: versions.length }),
      fc.infiniteStream(fc.integer()),
      fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 8 }),
    )
    .map(([repeats, randoms, batchSizes]) => {
      const deliveries = versions.flatMap((v, i) => Array.from({ length: repeats[i] ?? 1 }, () => v));
      // Fisher–Yates with the generated randoms, so shrinking stays meaningful.
      const it = randoms[Symbol.iterator]();
      for (let i = deliveries.length - 1; i > 0; i -= 1) {
        const j = Math.abs(it.next().value as number) % (i + 1);
        [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
      }
      const batches: Version[][] = [];
      let at = 0;
      let k = 0;
      while (at < deliveries.length) {
        const size = batchSizes[k++ % batchSizes.length]!;
        batches.push(deliveries.slice(at, at + size));
        at += size;
      }
      return { versions, batches };
    }),
);

/** The order of versions: created_at, then checksum, then deleted above not deleted. */
const rank = (v: Version) => `${v.createdAt}/${v.checksum}/${v.deleted ? 1 : 0}`;
const identity = (v: Version) => `${v.id}/${rank(v)}`;

function newest(versions: Version[]): Version[] {
  const best = new Map<string, Version>();
  for (const v of versions) {
    const b = best.get(v.id);
    if (!b || rank(v) > rank(b)) best.set(v.id, v);
  }
  return [...best.values()];
}

const batchOf = (orgId: string, versions: Version[]): Batch => ({
  orgId,
  arrivedVia: 'stream',
  items: versions.map((v) => ({ kind: 'record', raw: rawOf(v) })),
});

const CONTENT_TABLES = {
  records: 'id',
  record_metrics: 'record_id, metric_index',
  nutrition_segments: 'record_id, segment_index',
  nutrition_segment_metrics: 'record_id, segment_index, metric_index',
  nutrition_food: 'record_id, segment_index, food_index',
  nutrition_food_metrics: 'record_id, segment_index, food_index, metric_index',
  intraday_series: 'record_id, metric_index',
  record_versions: 'record_id, created_at, checksum, deleted_at',
} as const;

async function dump(orgId: string): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [table, order] of Object.entries(CONTENT_TABLES)) {
    const rows = await sql<Record<string, unknown>>`
      select * from ${sql.table(`validic.${table}`)} where org_id = ${orgId} order by ${sql.raw(order)}`.execute(
      t.warehouse.db,
    );
    out[table] = rows.rows.map(({ org_id, ingested_at, updated_at, archived_at, ...rest }) => rest);
  }
  return out;
}

let run = 0;

describe('loader order independence', () => {
  // 40 scenarios of up to 8 batches, each a real transaction: about a minute on a shared 2-core machine.
  it('any order, repetition and batching equals loading the newest versions once', {
    timeout: 300_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ versions, batches }) => {
        run += 1;
        const shuffled = `prop-${run}-any`;
        const reference = `prop-${run}-ref`;
        for (const batch of batches) await applyBatch(t.warehouse, batchOf(shuffled, batch));
        await applyBatch(t.warehouse, batchOf(reference, newest(versions)));

        const got = await dump(shuffled);
        const want = await dump(reference);
        const { record_versions: gotVersions, ...gotContent } = got;
        const { record_versions: _none, ...wantContent } = want;
        expect(gotContent).toEqual(wantContent);

        const winners = new Set(newest(versions).map(identity));
        const expectedVersions = [...new Set(versions.map(identity))].filter((v) => !winners.has(v)).sort();
        const stored = (
          gotVersions as { record_id: string; checksum: string; created_at: Date; deleted_at: Date | null }[]
        )
          .map((v) =>
            identity({
              id: v.record_id,
              checksum: v.checksum,
              createdAt: v.created_at.toISOString().replace('.000Z', 'Z'),
              deleted: v.deleted_at !== null,
            } as Version),
          )
          .sort();
        expect(stored).toEqual(expectedVersions);
      }),
      { numRuns: 40 },
    );
  });
});

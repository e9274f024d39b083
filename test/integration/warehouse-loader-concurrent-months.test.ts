/**
 * Concurrent loads into months that do not exist yet (a new organization's year of history backfilled by
 * several jobs at once) never deadlock. Before the month lock (month-partitions.ts), a month's creation
 * (ATTACH: ACCESS EXCLUSIVE on `records_undated`, then on `record_versions_undated`) and a load's probe
 * (ACCESS SHARE on record_versions' partitions, then on records') took the two default partitions in
 * opposite orders, and PostgreSQL killed one of them with `deadlock detected` (40P01).
 *
 * Several "worker processes" (each its own pool and its own memory of the months that exist) run several
 * loads each, all at once, batch after batch, into a year no partition exists for yet; ids overlap
 * between loads, so some loads update what another inserted (record_versions is written too). Every load
 * must succeed without the loader's conflict retry ever being needed (it would hide the deadlock), and the
 * warehouse must hold what one load after another would have left: per id the newest version current,
 * every other version sent in record_versions. Repeated over seeds and rounds (a fresh year each;
 * `LOADER_CONCURRENT_MONTHS_SEEDS=1,2,…` picks the seeds).
 *
 * Then the retry itself, on a load whose transaction is rolled back with 40P01 / 40001: it runs again
 * from the start, counted once, and a conflict that outlives the retries reaches the caller as a
 * `conflict` (which a job runner waits out without spending an attempt).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyFailure } from '../../src/errors/index.ts';
import type { LoadResult, RawItem } from '../../src/pipeline/batch.ts';
import { createPrng } from '../../src/sandbox/prng.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { CONFLICT_ATTEMPTS, onTransactionRetry } from '../../src/warehouse/loader/load-transaction.ts';
import { forgetMonthPartitions } from '../../src/warehouse/loader/month-partitions.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { metric, rawRecord } from '../helpers/fixtures/index.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const t = useTestDatabase();

const SEEDS = (process.env.LOADER_CONCURRENT_MONTHS_SEEDS ?? '1,2,3,4,5').split(',').map(Number);
const ROUNDS = 3;
/** "Worker processes": warehouses with their own pool and month cache. */
const PROCESSES = 3;
/** Loads running at once in each process (a worker's job concurrency). */
const LOADS_PER_PROCESS = 3;
/** Batches each load applies one after another. */
const BATCHES = 4;
/** Record ids of a round, shared by all its loads. */
const IDS = 60;

interface Version {
  id: string;
  k: number;
  start: string;
}

const ORG = 'org-concurrent-months';
const pad = (n: number) => String(n).padStart(2, '0');

function item(v: Version): RawItem {
  return {
    kind: 'record',
    raw: rawRecord('measurement', {
      id: v.id,
      checksum: `${v.id}-c${v.k}`,
      start_time: v.start,
      end_time: v.start,
      // A later version is newer: the current version is the one with the greatest k, whatever the order.
      created_at: `2000-01-01T${pad(v.k)}:00:00Z`,
      metrics: [metric('body_weight', 60 + v.k, 'kg')],
    }),
  };
}

/** The loads of one round: per load, its batches; every id of the round has one to three versions. */
function plan(seed: number, round: number, year: number): { loads: RawItem[][][]; versions: Version[] } {
  const prng = createPrng(seed * 1000 + round);
  const loads = PROCESSES * LOADS_PER_PROCESS;
  const batches: RawItem[][][] = Array.from({ length: loads }, () =>
    Array.from({ length: BATCHES }, () => []),
  );
  const versions: Version[] = [];
  for (let i = 0; i < IDS; i += 1) {
    const id = `r${seed}-${round}-${pad(i)}`;
    const count = prng.int(1, 3);
    for (let k = 1; k <= count; k += 1) {
      const month = prng.int(1, 12);
      const start = `${year}-${pad(month)}-${pad(prng.int(1, 28))}T${pad(prng.int(0, 23))}:00:00.000Z`;
      const v = { id, k, start };
      versions.push(v);
      batches[prng.int(0, loads - 1)]![prng.int(0, BATCHES - 1)]!.push(item(v));
    }
  }
  return { loads: batches, versions };
}

const sum = (results: LoadResult[], key: 'inserted' | 'updated' | 'unchanged' | 'stale') =>
  results.reduce((n, r) => n + r[key], 0);

describe('concurrent loads into months that do not exist yet', () => {
  let processes: Warehouse[] = [];
  beforeAll(async () => {
    processes = await Promise.all(
      Array.from({ length: PROCESSES }, () =>
        openWarehouse({ databaseUrl: t.url, maxConnections: LOADS_PER_PROCESS + 1 }),
      ),
    );
  });
  afterAll(async () => {
    await Promise.all(processes.map((w) => w.close()));
  });

  for (const seed of SEEDS) {
    it(`never deadlock, and leave what one load after another would (seed ${seed})`, async () => {
      for (let round = 0; round < ROUNDS; round += 1) {
        // A year no partition exists for: every month the round reaches is created by its loads.
        const year = 1900 + seed * ROUNDS + round;
        const { loads, versions } = plan(seed, round, year);
        const results = await Promise.all(
          loads.map(async (batches, n) => {
            const warehouse = processes[n % PROCESSES]!;
            const out: LoadResult[] = [];
            for (const items of batches)
              out.push(await applyBatch(warehouse, { orgId: ORG, arrivedVia: 'poll', items }));
            return out;
          }),
        );
        const all = results.flat();
        // No load met a deadlock (or a serialization failure) that its retry then hid.
        expect(all.map((r) => r.transactionRetries).filter((n) => n > 0)).toEqual([]);
        expect(sum(all, 'inserted') + sum(all, 'updated') + sum(all, 'unchanged') + sum(all, 'stale')).toBe(
          versions.length,
        );

        const newest = new Map<string, Version>();
        for (const v of versions) if ((newest.get(v.id)?.k ?? 0) < v.k) newest.set(v.id, v);
        const current = await sql<{ id: string; checksum: string; start_time: Date; part: string }>`
          select id, checksum, start_time, tableoid::regclass::text as part from validic.records
          where org_id = ${ORG} and id like ${`r${seed}-${round}-%`} order by id collate "C"`.execute(
          t.warehouse.db,
        );
        expect(current.rows.map((r) => [r.id, r.checksum, r.start_time.toISOString(), r.part])).toEqual(
          [...newest.values()]
            .sort((a, b) => (a.id < b.id ? -1 : 1))
            .map((v) => [
              v.id,
              `${v.id}-c${v.k}`,
              v.start,
              `validic_partitions.records_${year}_${v.start.slice(5, 7)}`,
            ]),
        );
        const kept = await sql<{ checksum: string }>`
          select checksum from validic.record_versions
          where org_id = ${ORG} and record_id like ${`r${seed}-${round}-%`} order by checksum collate "C"`.execute(
          t.warehouse.db,
        );
        expect(kept.rows.map((r) => r.checksum)).toEqual(
          versions
            .filter((v) => newest.get(v.id) !== v)
            .map((v) => `${v.id}-c${v.k}`)
            .sort(),
        );
        // The round's months go again, so every round meets as many partitions as the first.
        const tables = Array.from({ length: 12 }, (_, m) =>
          ['records', 'record_versions'].map((table) => `validic_partitions.${table}_${year}_${pad(m + 1)}`),
        ).flat();
        await sql.raw(`drop table if exists ${tables.join(', ')}`).execute(t.warehouse.db);
        for (const warehouse of processes) forgetMonthPartitions(warehouse);
      }
    });
  }
});

describe('a load that PostgreSQL rolls back for a conflict', () => {
  /** The warehouse, with its next `conflicts` transactions rolled back with `code` after all their work. */
  function conflicting(code: string, conflicts: number): Warehouse {
    let left = conflicts;
    return {
      ...t.warehouse,
      transaction: (fn, options) =>
        t.warehouse.transaction(async (tx) => {
          const out = await fn(tx);
          if (left-- > 0) throw Object.assign(new Error(`conflict ${code}`), { code });
          return out;
        }, options),
    };
  }
  const items = (prefix: string) =>
    [1, 2, 3].map((n) => item({ id: `${prefix}-${n}`, k: 1, start: `1890-0${n}-10T00:00:00.000Z` }));
  const stored = async (prefix: string) =>
    (
      await sql<{ n: number }>`select count(*)::int as n from validic.records
        where org_id = ${ORG} and id like ${`${prefix}-%`}`.execute(t.warehouse.db)
    ).rows[0]!.n;

  it('runs again from the start: counted once, the retries in its result and told to the listeners', async () => {
    const warehouse = conflicting('40P01', 2);
    const told: string[] = [];
    const stop = onTransactionRetry(warehouse, (code) => told.push(code));
    const result = await applyBatch(warehouse, { orgId: ORG, arrivedVia: 'poll', items: items('again') });
    stop();
    expect(result.inserted).toBe(3);
    expect(result.byType.measurement?.inserted).toBe(3);
    expect(result.transactionRetries).toBe(2);
    expect(told).toEqual(['40P01', '40P01']);
    expect(await stored('again')).toBe(3);
  });

  it('a conflict outliving the retries reaches the caller as a `conflict`, nothing written', async () => {
    const warehouse = conflicting('40001', CONFLICT_ATTEMPTS);
    const failure = await applyBatch(warehouse, {
      orgId: ORG,
      arrivedVia: 'poll',
      items: items('never'),
    }).catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe('40001');
    // A job runner waits and runs it again without spending an attempt (job-retry-decision.ts).
    expect(classifyFailure(failure)).toEqual({ kind: 'conflict' });
    expect(await stored('never')).toBe(0);
  });
});

/**
 * An analyst's long read of `validic.records` never stalls the loads of months that exist
 * (src/warehouse/loader/month-partitions.ts, migration 0032).
 *
 * A read without a start_time bound holds every partition, the default ones included, for as long as its
 * transaction is open; ATTACH needs the default partitions ACCESS EXCLUSIVE. The old creation waited for
 * that lock, and PostgreSQL queued every load and read that came after it behind it: another
 * organization's loads into the current month waited out the creation's 30 s lock timeout, then it
 * failed, on every retry, for as long as the read ran. Now the creation takes the lock with NOWAIT and
 * tries again later: it never stands in the queue, so the other loads go on while it keeps failing; when
 * the read ends, it creates the months. A caller that runs out of patience gets a `conflict` (a job
 * waits without spending an attempt) with a message that names the cause.
 *
 * And a backfill creates its months when it plans them, before any load (here with no user to load).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyFailure, UserFacingError } from '../../src/errors/index.ts';
import type { LoadResult } from '../../src/pipeline/batch.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { createMonthPartitions, ensureMonthPartitions } from '../../src/warehouse/loader/month-partitions.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { day, metric, rawRecord } from '../helpers/fixtures/index.ts';
import { ADMIN_URL, asLogin, withClient } from '../helpers/pg.ts';
import { useSandbox } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const t = useTestDatabase();
const ANALYST = `vs_long_read_${randomBytes(4).toString('hex')}`;

const measurement = (id: string, start: string) => ({
  kind: 'record' as const,
  raw: rawRecord('measurement', {
    id,
    checksum: `${id}-c1`,
    start_time: start,
    end_time: start,
    created_at: start,
    metrics: [metric('body_weight', 70, 'kg')],
  }),
});

const partitions = async (month: string): Promise<string[]> => {
  const { rows } = await sql<{ name: string }>`
    select relname as name from pg_class where relnamespace = 'validic_partitions'::regnamespace
      and relname like ${`%_${month.replace('-', '_')}`} order by 1`.execute(t.warehouse.db);
  return rows.map((r) => r.name);
};

describe('a month created while an analyst reads validic.records', () => {
  let analyst: pg.Client;

  beforeAll(async () => {
    await withClient(ADMIN_URL, (admin) =>
      admin.query(`create role ${ANALYST} login in role validic_analyst`),
    );
    analyst = new pg.Client({ connectionString: asLogin(t.url, ANALYST) });
    await analyst.connect();
  });
  afterAll(async () => {
    await analyst?.end();
    await withClient(ADMIN_URL, (admin) => admin.query(`drop role if exists ${ANALYST}`));
  });

  it('leaves every load into an existing month free, and is created once the read ends', async () => {
    // The month the other organization's loads go to exists (the current month, in production).
    await createMonthPartitions(t.warehouse, '2031-05', '2031-05');
    await analyst.query('begin');
    await analyst.query('select count(*) from validic.records');

    let busy = 0;
    let created: number | undefined;
    const creation = createMonthPartitions(t.warehouse, '1950-03', '1950-04', {
      patienceMs: 120_000,
      onBusy: () => {
        busy += 1;
      },
    }).then((n) => {
      created = n;
    });
    await waitForStep(
      'the creation to find the default partitions in use',
      () => expect(busy).toBeGreaterThan(0),
      {
        timeout: 20_000,
        interval: 10,
      },
    );

    const loads: LoadResult[] = [];
    for (let batch = 0; batch < 20; batch += 1) {
      const items = Array.from({ length: 25 }, (_, i) =>
        measurement(`other-${batch}-${i}`, `2031-05-${String(1 + (i % 28)).padStart(2, '0')}T08:00:00.000Z`),
      );
      loads.push(await applyBatch(t.warehouse, { orgId: 'org-other', arrivedVia: 'stream', items }));
    }
    // Every load committed while the creation was still trying, none of them ran again.
    expect(created).toBeUndefined();
    expect(loads.map((l) => [l.inserted, l.transactionRetries])).toEqual(loads.map(() => [25, 0]));
    expect(await partitions('1950-03')).toEqual([]);

    // Out of patience: a conflict (run again later, no attempt spent) that says why.
    const impatient = await createMonthPartitions(t.warehouse, '1950-05', '1950-05', { patienceMs: 0 }).catch(
      (error: unknown) => error,
    );
    expect(impatient).toBeInstanceOf(UserFacingError);
    expect(classifyFailure(impatient)).toEqual({ kind: 'conflict' });
    expect((impatient as Error).message).toMatch(
      /could not create the partitions of 1950-05: the default partitions .* were in use .* a long-running read of validic\.records/,
    );

    await analyst.query('commit');
    await creation;
    expect(created).toBe(4);
    expect(await partitions('1950-03')).toEqual(['record_versions_1950_03', 'records_1950_03']);
    // The loader finds it: a load into it creates nothing more.
    await ensureMonthPartitions(t.warehouse, ['1950-04-02T00:00:00.000Z']);
    const load = await applyBatch(t.warehouse, {
      orgId: 'org-backfill',
      arrivedVia: 'poll',
      items: [measurement('old-1', '1950-04-02T00:00:00.000Z')],
    });
    expect(load.inserted).toBe(1);
  });
});

describe('a backfill', () => {
  const sandbox = useSandbox({ seed: 61, users: 2, days: 3 });

  it('creates the months of its range when it plans them, before any load', async () => {
    // A range of months that do not exist yet, and no user to load: only the plan can create them.
    const from = day(400);
    const to = day(340);
    const months: string[] = [];
    for (
      let m = new Date(`${from.slice(0, 7)}-01T00:00:00Z`);
      m.toISOString() <= to;
      m.setUTCMonth(m.getUTCMonth() + 1)
    )
      months.push(m.toISOString().slice(0, 7));
    expect(months).toHaveLength(3);
    for (const month of months) expect(await partitions(month)).toEqual([]);
    const records = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from validic.records`.execute(t.warehouse.db))
        .rows[0]!.n;
    const before = await records();
    const result = await runCli(
      ['backfill', '--from', from, '--to', to, '--users', 'nobody-at-all', '--no-connections'],
      sandboxEnv(sandbox, { DATABASE_URL: t.url }),
    );
    // The uid names no user: nothing is loaded, and the run ends as a usage error naming it (exit 2),
    // after the plan.
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(
      /--users names a uid that is not \(or no longer\) a user of the organization: nobody-at-all/,
    );
    expect(await records()).toBe(before);
    for (const month of months) {
      const suffix = month.replace('-', '_');
      expect(await partitions(month)).toEqual([`record_versions_${suffix}`, `records_${suffix}`]);
    }
  });
});

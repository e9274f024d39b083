/**
 * records.poll against the sandbox over HTTP and a real PostgreSQL: one job loads one user's window of
 * several resources, marks each resource's ledger window done with its data, keeps a failing resource
 * from holding the others back, fetches only the pending resources on a retry, and splits a window
 * bigger than the loader's per-key locks into several transactions without losing a window or a record.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobWarehouse } from '../../jobs/job-context.ts';
import { recordsPoll } from '../../jobs/records-poll.ts';
import { configSchema } from '../../src/config/schema.ts';
import { PermanentError, PermanentHttpError } from '../../src/errors/index.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { toV2Resource } from '../../src/validic/platform-limits.ts';
import { applyBatch, MAX_KEY_LOCKS } from '../../src/warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { listWindows, planWindows, recordsWindowKey, startRun } from '../../src/warehouse/window-ledger.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { sandboxOrganization } from '../helpers/sandbox-organization.ts';

const START = '2026-03-01';
const END = '2026-03-30';
const RESOURCES = ['measurements', 'nutrition', 'sleep'];

describe('records.poll: one user, one window, several resources', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;
  let uid: string;
  let transactions = 0;
  /** The warehouse, counting the transactions the job opens. */
  let counting: Warehouse;

  beforeAll(async () => {
    // Heavy on measurements so that one user's window holds more records than MAX_KEY_LOCKS.
    sandbox = await startSandbox({
      seed: 31,
      users: 2,
      days: 30,
      now: new Date('2026-03-30T12:00:00Z'),
      mix: { measurement: 12, nutrition: 3, sleep: 1 },
    });
    db = await createTestDatabase();
    const config = configSchema.parse({
      databaseUrl: db.url,
      allowInsecureLoopback: true,
      organizations: [sandboxOrganization(sandbox)],
    });
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
    counting = {
      ...db.warehouse,
      transaction: (fn, options) => {
        transactions += 1;
        return db.warehouse.transaction(fn, options);
      },
    };
    uid = sandbox.truth.users()[0]!.uid;
  });
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
  });

  /** Runs the job with `fail` making one resource's request throw; returns the resources requested. */
  async function runPoll(runId: string, attempt: number, fail?: { resource: string; error: Error }) {
    const requested: string[] = [];
    const base = runtime.jobContext({
      jobId: 'test',
      attempt,
      signal: new AbortController().signal,
      enqueue: async () => true,
    });
    const real = base.org(sandbox.orgId);
    const ctx = {
      ...base,
      warehouse: jobWarehouse(counting),
      org: () => ({
        ...real,
        v2: {
          ...real.v2,
          fetchRecords: async (params: Parameters<typeof real.v2.fetchRecords>[0]) => {
            requested.push(params.resource);
            if (fail && params.resource === fail.resource) throw fail.error;
            return real.v2.fetchRecords(params);
          },
        },
      }),
    };
    const payload = recordsPoll.payload.parse({
      orgId: sandbox.orgId,
      uid,
      resources: RESOURCES,
      startDate: START,
      endDate: END,
      runId,
    });
    const outcome = await recordsPoll.run(ctx, payload).then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
    return { requested, ...outcome };
  }

  async function planRun(): Promise<string> {
    const run = await startRun(db.warehouse.db, {
      orgId: sandbox.orgId,
      command: 'backfill',
      args: { test: Math.random() },
    });
    await planWindows(
      db.warehouse.db,
      run.id,
      sandbox.orgId,
      RESOURCES.map((resource) => ({
        windowKey: recordsWindowKey(resource, uid, START, END),
        uid,
        resource,
        startDate: START,
        endDate: END,
      })),
    );
    return run.id;
  }

  const stored = async (resource: string) => {
    const { rows } = await sql<{ id: string }>`
      select id from validic.records where uid = ${uid} and type = ${resource === 'measurements' ? 'measurement' : resource}
      order by id`.execute(db.warehouse.db);
    return rows.map((r) => r.id);
  };
  const truth = (resource: string) =>
    sandbox.truth
      .records()
      .filter(
        (r) =>
          r.user.uid === uid &&
          toV2Resource(r.type) === resource &&
          r.start_time.slice(0, 10) >= START &&
          r.start_time.slice(0, 10) <= END,
      )
      .map((r) => r.id)
      .sort();

  it('loads the others when one fails for good, then a retry fetches only the pending one', async () => {
    const runId = await planRun();
    const first = await runPoll(runId, 1, {
      resource: 'nutrition',
      error: new PermanentError('not enabled'),
    });
    expect(first.error).toBeInstanceOf(PermanentError);
    expect(first.requested).toEqual(RESOURCES);
    const status = async () =>
      Object.fromEntries((await listWindows(db.warehouse.db, runId)).map((w) => [w.resource, w.status]));
    expect(await status()).toEqual({ measurements: 'done', nutrition: 'pending', sleep: 'done' });
    expect(await stored('measurements')).toEqual(truth('measurements'));
    expect(await stored('sleep')).toEqual(truth('sleep'));
    expect(await stored('nutrition')).toEqual([]);

    const retry = await runPoll(runId, 2);
    expect(retry.error).toBeUndefined();
    expect(retry.requested).toEqual(['nutrition']);
    expect(await status()).toEqual({ measurements: 'done', nutrition: 'done', sleep: 'done' });
    expect(await stored('nutrition')).toEqual(truth('nutrition'));
    const run = await sql<{
      status: string;
    }>`select status from validic_sync.runs where id = ${runId}`.execute(db.warehouse.db);
    expect(run.rows[0]!.status).toBe('done');
  });

  it('stops at a transient failure and loads what came before it', async () => {
    const runId = await planRun();
    const outage = new Error('platform unreachable');
    const polled = await runPoll(runId, 1, { resource: 'nutrition', error: outage });
    expect(polled.error).toBe(outage);
    expect(polled.requested).toEqual(['measurements', 'nutrition']);
    const windows = await listWindows(db.warehouse.db, runId);
    expect(Object.fromEntries(windows.map((w) => [w.resource, w.status]))).toEqual({
      measurements: 'done',
      nutrition: 'pending',
      sleep: 'pending',
    });
  });

  it('reads a job queued by the previous version (one resource and its window key)', () => {
    const old = {
      orgId: 'o',
      uid: 'u',
      resource: 'sleep',
      startDate: START,
      endDate: END,
      runId: 'r',
      windowKey: 'k',
    };
    expect(recordsPoll.payload.parse(old)).toEqual({
      orgId: 'o',
      uid: 'u',
      resources: ['sleep'],
      startDate: START,
      endDate: END,
      runId: 'r',
    });
  });

  it('splits a window bigger than the per-key locks into transactions, losing nothing', async () => {
    uid = sandbox.truth.users()[1]!.uid; // a user none of the tests above loaded
    const sizes = RESOURCES.map((r) => truth(r).length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(MAX_KEY_LOCKS);
    const runId = await planRun();
    transactions = 0;
    const polled = await runPoll(runId, 1);
    expect(polled.error).toBeUndefined();
    expect(transactions).toBeGreaterThan(1);
    expect(transactions).toBeLessThan(RESOURCES.length + 1);
    expect(polled.result).toMatchObject({
      records: sizes.reduce((a, b) => a + b, 0),
      inserted: sizes.reduce((a, b) => a + b, 0),
    });
    for (const resource of RESOURCES) expect(await stored(resource)).toEqual(truth(resource));
    const windows = await listWindows(db.warehouse.db, runId);
    expect(windows.map((w) => [w.resource, w.status, w.records])).toEqual(
      RESOURCES.map((r, i) => [r, 'done', sizes[i]]).sort(),
    );
  });

  it("a 404 on a resource of a user who still answers is the resource's: the job fails as before", async () => {
    uid = sandbox.truth.users()[0]!.uid;
    const runId = await planRun();
    const notServed = new PermanentHttpError({
      method: 'GET',
      url: '/users/x/nutrition',
      status: 404,
      bodyExcerpt: '',
      messages: ['Not Found'],
    });
    const polled = await runPoll(runId, 1, { resource: 'nutrition', error: notServed });
    expect(polled.error).toBe(notServed);
    expect(polled.requested).toEqual(RESOURCES);
    const windows = await listWindows(db.warehouse.db, runId);
    expect(Object.fromEntries(windows.map((w) => [w.resource, w.status]))).toEqual({
      measurements: 'done',
      nutrition: 'pending',
      sleep: 'done',
    });
  });

  it('a user gone from the platform (404, and 404 itself) is marked removed and its windows finish', async () => {
    const user = sandbox.truth.users()[0]!;
    uid = user.uid;
    await applyBatch(db.warehouse, {
      orgId: sandbox.orgId,
      arrivedVia: 'poll',
      items: [{ kind: 'user', raw: user }],
    });
    sandbox.control.deleteUser(uid);
    const runId = await planRun();
    const polled = await runPoll(runId, 1);
    expect(polled.error).toBeUndefined();
    // The first resource's 404 and the user's own 404 decide; the other resources are not asked for.
    expect(polled.requested).toEqual(['measurements']);
    expect(polled.result).toMatchObject({ userRemoved: true, records: 0 });
    const row = await db.warehouse.db
      .selectFrom('validic.users')
      .select('removed_at')
      .where('org_id', '=', sandbox.orgId)
      .where('uid', '=', uid)
      .executeTakeFirstOrThrow();
    expect(row.removed_at).toBeInstanceOf(Date);
    const windows = await listWindows(db.warehouse.db, runId);
    expect(windows.map((w) => [w.resource, w.status, w.records])).toEqual(
      RESOURCES.map((r) => [r, 'done', 0]).sort(),
    );
    const run = await sql<{
      status: string;
    }>`select status from validic_sync.runs where id = ${runId}`.execute(db.warehouse.db);
    expect(run.rows[0]!.status).toBe('done');
  });
});

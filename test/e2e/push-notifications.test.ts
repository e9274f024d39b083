/**
 * Push notifications end to end: the sandbox POSTs its enterprise push notifications to the worker's
 * push listener running the push handler; each announced item becomes a legacy.fetch job on an inline runner;
 * the announced records land in the warehouse with arrived_via `push`, with no scheduled poll at all.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInlineRunner } from '../../src/cli/run-jobs-inline.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { handlePushRequest } from '../../src/push/handle-push.ts';
import { pushDepsFromConfig } from '../../src/push/push-deps.ts';
import type { InlineRunner } from '../../src/queue/inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/runtime/runtime.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { type RunningServer, serverLimits } from '../../src/server/hardened-server.ts';
import { startPushServer } from '../../src/server/push-server.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const SECRET = 'e2e-push-secret-4f1c9a7b2d';

describe('push notifications from the sandbox', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;
  let runner: InlineRunner;
  let server: RunningServer;
  let pushUrl: string;
  let configDir: string;
  const jobsRun: string[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 5, users: 3, days: 10, faults: { rate5xx: 0.1, paths: ['/v1/'] } });
    db = await createTestDatabase();
    configDir = await mkdtemp(join(tmpdir(), 'validic-push-'));
    const config = loadConfig(
      { ...sandboxEnv(sandbox), DATABASE_URL: db.url, PUSH_SECRET: SECRET },
      { cwd: configDir },
    );
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
    runner = createInlineRunner(runtime, new AbortController().signal, 4);
    runner.on('completed', (job) => jobsRun.push(job.name));
    const deps = pushDepsFromConfig({
      config,
      warehouse: db.warehouse,
      enqueue: (name, payload) => runner.enqueue(name, payload),
    });
    // The worker's own push listener (hardened, push path only), on a free port.
    server = await startPushServer({
      host: '127.0.0.1',
      port: 0,
      log: silentLogger,
      limits: serverLimits(config.http, 'push'),
      push: { path: config.http.pushPath, handle: (req, res) => handlePushRequest(req, res, deps) },
    });
    pushUrl = `${server.url}${config.http.pushPath}`;
  });
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  const stored = async (ids: string[]) =>
    (
      await sql<{ object: string; id: string; last_updated: Date; arrived_via: string }>`
        select object, id, last_updated, arrived_via from validic.legacy_records
        where id = any(${ids}::text[]) order by object, id`.execute(db.warehouse.db)
    ).rows.map((r) => ({ ...r, last_updated: r.last_updated.toISOString() }));

  const expected = (records: { object: string; _id: string; last_updated: string }[]) =>
    records
      .map((r) => ({
        object: r.object,
        id: r._id,
        last_updated: new Date(r.last_updated).toISOString(),
        arrived_via: 'push',
      }))
      .sort((a, b) => (a.object === b.object ? (a.id < b.id ? -1 : 1) : a.object < b.object ? -1 : 1));

  it('loads the records a notification announces, with no scheduled poll', async () => {
    sandbox.control.registerPushUrl(`${pushUrl}?secret=${SECRET}`);
    const [first, second] = sandbox.truth.legacyUsers();
    const added = [
      sandbox.control.addLegacyRecord({ object: 'fitness', user_id: first!._id }),
      sandbox.control.addLegacyRecord({ object: 'nutrition', user_id: second!._id }),
      sandbox.control.addLegacyRecord({ object: 'tobacco_cessation', user_id: first!._id }),
    ];
    const old = sandbox.truth.legacyRecords('routine')[0]!;
    const updated = sandbox.control.updateLegacyRecord('routine', old._id, { steps: 4242 });
    await sandbox.control.flushNotifications();
    expect(await runner.drain()).toEqual([]);

    const announced = [
      ...added.map((r, i) => ({ ...r, object: ['fitness', 'nutrition', 'tobacco_cessation'][i]! })),
      { ...updated, object: 'routine' },
    ];
    expect(await stored(announced.map((r) => r._id))).toEqual(expected(announced));
    const routine = await sql<{ steps: number }>`
      select (raw->>'steps')::int as steps from validic.legacy_records where id = ${old._id}`.execute(
      db.warehouse.db,
    );
    expect(routine.rows[0]!.steps).toBe(4242);
    expect(new Set(jobsRun)).toEqual(new Set(['legacy.fetch']));
    expect(
      sandbox.truth
        .deliveries()
        .filter((d) => d.kind === 'push')
        .map((d) => d.status),
    ).toEqual([202, 202, 202, 202]);
    const notifications = await sql<{ status: string; n: number }>`
      select status, count(*)::int as n from validic_sync.push_notifications group by status`.execute(
      db.warehouse.db,
    );
    expect(notifications.rows).toEqual([{ status: 'queued', n: 4 }]);
    // The secret rode in the registered URL; it is never stored.
    const leaked = await sql<{ n: number }>`
      select count(*)::int as n from validic_sync.push_notifications where raw like ${`%${SECRET}%`}`.execute(
      db.warehouse.db,
    );
    expect(leaked.rows[0]!.n).toBe(0);
    sandbox.control.unregisterPushUrl(`${pushUrl}?secret=${SECRET}`);
  });

  it('fetches a latest window when an item names only the object and when it was updated', async () => {
    const record = sandbox.truth.legacyRecords('sleep')[0]!;
    const updated = sandbox.control.updateLegacyRecord('sleep', record._id, { total_sleep: 123 });
    const response = await fetch(pushUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-validic-sync-secret': SECRET },
      body: JSON.stringify({ data: [{ type: 'sleep', last_updated: updated.last_updated }] }),
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ status: 'queued', enqueued: 1 });
    expect(await runner.drain()).toEqual([]);
    expect(await stored([record._id])).toEqual(expected([{ ...updated, object: 'sleep' }]));
  });
});

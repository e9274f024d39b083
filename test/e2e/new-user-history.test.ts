/**
 * Users new to the listing get their history: after the first complete users listing, a users.sync that
 * stores a user for the first time queues a backfill of `sync.newUserHistoryDays` for it (newest windows
 * first, without listing the users again), and its records of those days land. The first listing
 * queues none (the operator's `backfill` decides how much history the existing users get).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { silentLogger } from '../../src/log/logger.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { createInlineRunner } from '../../src/worker/catalog-inline-runner.ts';
import { openRuntime, type Runtime } from '../../src/worker/runtime.ts';
import { sandboxEnv } from '../helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const DAY_MS = 86_400_000;
const utcDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('users new to the listing get their history', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let runtime: Runtime;
  let configDir: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 53, users: 3, days: 5 });
    db = await createTestDatabase();
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    configDir = await mkdtemp(join(tmpdir(), 'validic-new-users-'));
    const configFile = join(configDir, 'config.json');
    await writeFile(configFile, JSON.stringify({ sync: { newUserHistoryDays: 90 } }));
    const config = loadConfig({ ...env, DATABASE_URL: undefined }, { cwd: configDir, file: configFile });
    runtime = await openRuntime(config, silentLogger, { warehouse: db.warehouse, useRedis: false });
  });
  afterAll(async () => {
    await runtime?.close();
    await sandbox?.close();
    await db?.drop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  async function run(name: 'users.sync', payload: { orgId: string }) {
    const runner = createInlineRunner(runtime, new AbortController().signal, 1);
    const completed: { name: string; payload: any; result: any }[] = [];
    runner.on('completed', (job, result) => completed.push({ name: job.name, payload: job.payload, result }));
    runner.enqueue(name, payload);
    const failures = await runner.drain();
    expect(failures.map((f) => f.error.message)).toEqual([]);
    return completed;
  }

  it('queues nothing on the first listing, then the history of a new user, newest first', async () => {
    const first = await run('users.sync', { orgId: sandbox.orgId });
    expect(first.map((c) => c.name)).toEqual(['users.sync']);
    expect(first[0]!.result.newUsers).toBe(0);

    // A user joins with records 80, 40 and 2 days back (within the 90 days), and one 100 days back (not).
    const user = sandbox.control.addUser();
    const days = [80, 40, 2, 100].map((n) => utcDate(Date.now() - n * DAY_MS));
    const records = days.map((day) => sandbox.control.addRecord({ uid: user.uid, type: 'measurement', day }));

    const second = await run('users.sync', { orgId: sandbox.orgId });
    expect(second[0]!.result.newUsers).toBe(1);
    const backfill = second.find((c) => c.name === 'records.backfill')!;
    expect(backfill.payload).toMatchObject({
      uids: [user.uid],
      from: utcDate(Date.now() - 89 * DAY_MS),
      to: utcDate(Date.now()),
      newestFirst: true,
      listUsers: false,
      connections: false,
    });
    // Newest windows first: the polls were queued (and, one at a time, run) newest to oldest.
    const polls = second.filter((c) => c.name === 'records.poll').map((c) => c.payload.startDate as string);
    expect(polls.length).toBeGreaterThan(1);
    expect(polls).toEqual([...polls].sort().reverse());
    // No users listing inside the backfill: the users were just listed.
    expect(second.filter((c) => c.name === 'users.sync')).toHaveLength(1);

    const stored = await sql<{ id: string }>`
      select id from validic.records where org_id = ${sandbox.orgId} and uid = ${user.uid} order by id`.execute(
      db.warehouse.db,
    );
    expect(stored.rows.map((r) => r.id)).toEqual(
      records
        .slice(0, 3)
        .map((r) => r.id)
        .sort(),
    );

    // Listed again: no longer new, nothing queued.
    const third = await run('users.sync', { orgId: sandbox.orgId });
    expect(third.map((c) => c.name)).toEqual(['users.sync']);
  });
});

/**
 * An analyst cannot hold the loader (migration 0033, src/warehouse/advisory-lock-access.ts,
 * docs/security.md "What an analyst can and cannot do to the worker").
 *
 * - An analyst or tenant login may take no advisory lock at all: `validic-sync sql "select
 *   pg_advisory_lock(…)"` and a plain client (what psql and a BI tool are) get "permission denied" for
 *   every lock-taking function, on the loader's own keys too; the embedded PGlite's `sql` likewise.
 * - During a backfill and a stream, a session that CAN take them (a superuser here; any analyst before
 *   0033) holds the org's load lock until a load waiting for it has given up (55P03 after
 *   LOAD_LOCK_TIMEOUT_MS; the lock is still held, so it cannot have been granted) and run again; once
 *   the lock is free both commands end with the warehouse equal to the sandbox's truth.
 * - `migrate` says when the functions are still open to PUBLIC (a migration run without a superuser),
 *   with the statement that closes them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADVISORY_LOCKS_FOR_LOADER_SQL,
  advisoryLocksOpenToPublic,
} from '../../src/warehouse/advisory-lock-access.ts';
import { loadLocks } from '../../src/warehouse/loader/apply-batch.ts';
import { LOAD_LOCK_TIMEOUT_MS } from '../../src/warehouse/loader/load-transaction.ts';
import { migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse } from '../../src/warehouse/open-warehouse.ts';
import { runCli, sandboxEnv, spawnCli } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { ADMIN_URL, asLogin, asRole, createTestDatabase, withClient } from '../helpers/pg.ts';
import { useSandbox } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';

const suffix = randomBytes(4).toString('hex');
const ANALYST = `vs_lock_analyst_${suffix}`;
const TENANT = `vs_lock_tenant_${suffix}`;

/** Every function that takes an advisory lock, with arguments to call it with. */
async function lockCalls(url: string): Promise<string[]> {
  return await withClient(url, async (admin) => {
    const { rows } = await admin.query<{ name: string; args: string }>(
      `select proname as name, pg_get_function_identity_arguments(oid) as args from pg_proc
        where pronamespace = 'pg_catalog'::regnamespace
          and proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$' order by 1, 2`,
    );
    return rows.map((r) => `${r.name}(${r.args === 'bigint' ? '7436112010' : '743611, 2010'})`);
  });
}

/** SQLSTATE of `statement` run by `url`'s login, or 'allowed'. */
async function outcome(url: string, statement: string): Promise<string> {
  return await withClient(url, async (client) => {
    await client.query('begin');
    try {
      await client.query(statement);
      return 'allowed';
    } catch (error) {
      return (error as { code?: string }).code ?? 'error';
    } finally {
      await client.query('rollback');
    }
  });
}

describe('advisory locks belong to the loader', () => {
  const sandbox = useSandbox({ seed: 53, users: 3, days: 6, pokeIntervalMs: 200 });
  const db = useTestDatabase();
  let orgKey: string;

  beforeAll(async () => {
    await withClient(ADMIN_URL, async (admin) => {
      await admin.query(`create role ${ANALYST} login in role validic_analyst`);
      await admin.query(`create role ${TENANT} login in role validic_analyst`);
    });
    await withClient(db.url, (admin) =>
      admin.query(`select validic_sync.grant_tenant('${TENANT}', '${sandbox.orgId}')`),
    );
    // The key every load of the org takes (shared by small batches, exclusive by big ones).
    orgKey = loadLocks(sandbox.orgId, { records: [], users: [], legacy: [] }).shared![0]!;
  });
  afterAll(async () => {
    await withClient(db.url, (admin) => admin.query(`select validic_sync.revoke_tenant('${TENANT}')`));
    await withClient(ADMIN_URL, async (admin) => {
      for (const role of [ANALYST, TENANT]) await admin.query(`drop role if exists ${role}`);
    });
  });

  it('refuses every advisory lock to an analyst and a tenant login, and lets the loader take them', async () => {
    const calls = [...(await lockCalls(db.url)), `pg_advisory_lock(hashtextextended('${orgKey}', 0))`];
    expect(calls).toHaveLength(17);
    for (const login of [ANALYST, TENANT]) {
      const refused = await Promise.all(
        calls.map((call) => outcome(asLogin(db.url, login), `select ${call}`)),
      );
      expect(refused, login).toEqual(calls.map(() => '42501'));
    }
    const loader = await Promise.all(
      calls.map((call) => outcome(asRole(db.url, 'validic_loader'), `select ${call}`)),
    );
    expect(loader).toEqual(calls.map(() => 'allowed'));
    expect(await advisoryLocksOpenToPublic(db.warehouse)).toEqual([]);
  });

  it('refuses them to `validic-sync sql` as the analyst login (exit 1, the database says why)', async () => {
    for (const query of [
      'select pg_advisory_lock(7436112010), pg_sleep(50)',
      `select pg_advisory_xact_lock(hashtextextended('${orgKey}', 0)), pg_sleep(50)`,
      'select pg_try_advisory_lock_shared(743611, 2010)',
    ]) {
      const result = await runCli(['sql', query], {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LOG_LEVEL: 'warn',
        DATABASE_URL: asLogin(db.url, ANALYST),
      });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(/query failed: permission denied for function pg_(try_)?advisory_/);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('loads of a backfill and a stream wait at most their lock timeout for a held lock, then retry: nothing lost', async () => {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
    const stream = spawnCli(['stream', '--exit-when-idle', '3'], env);
    await waitForStep('the stream to connect', () => expect(sandbox.truth.streams()[0]?.members).toBe(1), {
      timeout: 30_000,
      interval: 20,
    });
    // A session that may take advisory locks holds the org's load lock before either command loads.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(hashtextextended($1, 0))', [orgKey]);
      sandbox.control.startLiveFeed({ ratePerSecond: 20 });
      const backfill = spawnCli(['backfill', '--from', day(30), '--to', day(0)], env);
      const waiting = `select pid, waitstart::text as since from pg_locks where locktype = 'advisory' and not granted
        and database = (select oid from pg_database where datname = current_database())`;
      const first = await waitForStep(
        'a load waiting for the held lock',
        async () => {
          const { rows } = await holder.query<{ pid: number; since: string }>(waiting);
          expect(rows.length).toBeGreaterThan(0);
          return rows[0]!;
        },
        { timeout: 30_000, interval: 20 },
      );
      // Still held: the waiting load stops waiting only by giving up, after its lock timeout.
      await waitForStep(
        'the waiting load to give up',
        async () => {
          const { rows } = await holder.query<{ pid: number; since: string }>(waiting);
          expect(rows.filter((r) => r.pid === first.pid && r.since === first.since)).toEqual([]);
        },
        { timeout: LOAD_LOCK_TIMEOUT_MS + 30_000, interval: 50 },
      );
      await holder.query('select pg_advisory_unlock_all()');
      const backfilled = await backfill.result;
      expect(backfilled.code, backfilled.stderr.slice(-3000)).toBe(0);
      sandbox.control.stopLiveFeed();
      const streamed = await stream.result;
      expect(streamed.code, streamed.stderr.slice(-3000)).toBe(0);
      // A load that waited its lock timeout ran again (load-transaction.ts, retryOnConflict).
      expect(`${backfilled.stderr}${streamed.stderr}`).toMatch(/"code":"55P03".*running it again/);
    } finally {
      sandbox.control.stopLiveFeed();
      await holder.end();
      if (stream.exitCode === null) stream.kill('SIGKILL');
    }
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
  });
});

describe('migrate and advisory locks open to PUBLIC', () => {
  it('warns with the statement that closes them, and is quiet once an administrator ran it', async () => {
    const db = await createTestDatabase();
    try {
      // A warehouse migrated by the owner's login: 0033 could not change pg_catalog's rights.
      await withClient(db.url, (admin) =>
        admin.query(`do $$ declare f regprocedure; begin
          for f in select oid::regprocedure from pg_proc where pronamespace = 'pg_catalog'::regnamespace
                      and proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$'
          loop execute format('grant execute on function %s to public', f); end loop; end $$`),
      );
      expect(await advisoryLocksOpenToPublic(db.warehouse)).toHaveLength(16);
      const env = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', DATABASE_URL: db.url };
      const open = await runCli(['migrate'], env);
      expect(open.code, open.stderr).toBe(0);
      expect(open.stdout).toContain(
        'warning: every login of this database may take advisory locks (16 functions',
      );
      expect(open.stdout).toContain(ADVISORY_LOCKS_FOR_LOADER_SQL);
      await withClient(db.url, (admin) => admin.query(ADVISORY_LOCKS_FOR_LOADER_SQL));
      expect(await advisoryLocksOpenToPublic(db.warehouse)).toEqual([]);
      const closed = await runCli(['migrate'], env);
      expect(closed.code, closed.stderr).toBe(0);
      expect(closed.stdout).not.toContain('warning');
    } finally {
      await db.drop();
    }
  });
});

describe('advisory locks on the embedded PGlite', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'validic-locks-pglite-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('refuses them to `validic-sync sql`, which runs as validic_analyst', async () => {
    const warehouse = await openWarehouse({ dataDir });
    try {
      await migrateToLatest(warehouse.db);
      expect(await advisoryLocksOpenToPublic(warehouse)).toEqual([]);
    } finally {
      await warehouse.close();
    }
    const result = await runCli(['sql', 'select pg_advisory_lock(7436112010)'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      VALIDIC_DATA_DIR: dataDir,
    });
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/permission denied for function pg_advisory_lock/);
  });
});

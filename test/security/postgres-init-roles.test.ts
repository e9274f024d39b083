/**
 * docker-compose.yml's database setup without Docker: deploy/postgres/init/10-validic-roles.sh (what the
 * postgres image runs once as its superuser) run against the local PostgreSQL on an empty database;
 * then `migrate` as the migrator login and a load as the app login, neither of them privileged; only
 * the loader and the owner may take advisory locks (what migration 0033 cannot do without a superuser).
 * Trust auth on the test cluster: the passwords are set but not checked here.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { advisoryLocksOpenToPublic } from '../../src/warehouse/advisory-lock-access.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { FolderMigrationProvider, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { ADMIN_URL, asLogin, createEmptyDatabase, type TestDatabase, withClient } from '../helpers/pg.ts';
import { sandboxItems } from '../helpers/sandbox-items.ts';

const SCRIPT = fileURLToPath(new URL('../../deploy/postgres/init/10-validic-roles.sh', import.meta.url));
const suffix = randomBytes(4).toString('hex');
const MIGRATOR = `vs_migrator_${suffix}`;
const APP = `vs_app_${suffix}`;
const ANALYST = `vs_analyst_${suffix}`;

describe('the compose database init script', () => {
  let db: TestDatabase;
  let sandbox: Sandbox;
  const open: Warehouse[] = [];

  beforeAll(async () => {
    db = await createEmptyDatabase();
    sandbox = await startSandbox({ seed: 71, users: 2, days: 3 });
    const admin = new URL(ADMIN_URL);
    await promisify(execFile)('sh', [SCRIPT], {
      env: {
        PATH: process.env.PATH,
        PGHOST: admin.hostname,
        PGPORT: admin.port || '5432',
        POSTGRES_USER: decodeURIComponent(admin.username),
        POSTGRES_DB: db.name,
        VALIDIC_MIGRATOR_USER: MIGRATOR,
        VALIDIC_APP_USER: APP,
        VALIDIC_OWNER_PASSWORD: randomBytes(16).toString('hex'),
        VALIDIC_LOADER_PASSWORD: randomBytes(16).toString('hex'),
      },
    });
  });
  afterAll(async () => {
    for (const w of open) await w.close();
    await sandbox?.close();
    await db?.drop();
    await withClient(ADMIN_URL, async (admin) => {
      for (const login of [MIGRATOR, APP, ANALYST]) await admin.query(`drop role if exists ${login}`);
    });
  });

  it('refuses to run without the passwords', async () => {
    const run = promisify(execFile)('sh', [SCRIPT], { env: { PATH: process.env.PATH } });
    await expect(run).rejects.toMatchObject({
      stderr: expect.stringMatching(/VALIDIC_OWNER_PASSWORD: is required/),
    });
  });

  it('creates two logins that are neither superuser, CREATEROLE, CREATEDB nor BYPASSRLS', async () => {
    const { rows } = await sql<Record<string, unknown>>`
      select rolname, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolcanlogin from pg_roles
      where rolname in (${MIGRATOR}, ${APP}) order by rolname = ${MIGRATOR}`.execute(db.warehouse.db);
    expect(rows).toEqual(
      [APP, MIGRATOR].map((rolname) => ({
        rolname,
        rolsuper: false,
        rolcreaterole: false,
        rolcreatedb: false,
        rolbypassrls: false,
        rolcanlogin: true,
      })),
    );
  });

  it('lets the migrator login migrate an empty database, everything owned by validic_owner', async () => {
    const migrator = await openWarehouse({ databaseUrl: asLogin(db.url, MIGRATOR), maxConnections: 2 });
    open.push(migrator);
    const who = await sql<{ u: string; s: string }>`select current_user as u, session_user as s`.execute(
      migrator.db,
    );
    expect(who.rows[0]).toEqual({ u: 'validic_owner', s: MIGRATOR });
    const all = Object.keys(await new FolderMigrationProvider().getMigrations()).sort();
    expect(await migrateToLatest(migrator.db)).toEqual(all);
    const owners = await sql<{ owner: string }>`
      select distinct pg_get_userbyid(c.relowner) as owner from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('validic', 'validic_sync') or c.relname like 'kysely_migration%'`.execute(
      migrator.db,
    );
    expect(owners.rows).toEqual([{ owner: 'validic_owner' }]);
  });

  it('leaves advisory locks to the loader and the owner: an analyst login may take none', async () => {
    const migrator = open[0]!;
    // The migration could not (no superuser), but the init script did.
    expect(await advisoryLocksOpenToPublic(migrator)).toEqual([]);
    await withClient(ADMIN_URL, (admin) =>
      admin.query(`create role ${ANALYST} login in role validic_analyst`),
    );
    await withClient(asLogin(db.url, ANALYST), async (analyst) => {
      await expect(analyst.query('select pg_advisory_lock(1)')).rejects.toMatchObject({ code: '42501' });
      await expect(analyst.query('select pg_try_advisory_xact_lock_shared(1, 2)')).rejects.toMatchObject({
        code: '42501',
      });
    });
    await withClient(asLogin(db.url, APP), async (app) => {
      await app.query('begin');
      await app.query('select pg_advisory_xact_lock(1)');
      await app.query('rollback');
    });
  });

  it('lets the app login load every kind of item and change no schema', async () => {
    const app = await openWarehouse({ databaseUrl: asLogin(db.url, APP), maxConnections: 2 });
    open.push(app);
    const batch = {
      orgId: sandbox.orgId,
      arrivedVia: 'poll' as const,
      items: sandboxItems(sandbox),
    };
    const result = await applyBatch(app, batch, { cursors: [{ key: 'init-test', value: { at: 1 } }] });
    expect(result.inserted).toBeGreaterThan(0);
    // `status` reads the views through validic_analyst.
    await sql`select * from validic.data_freshness`.execute(app.db);
    for (const ddl of [
      'create table validic.intruder (id int)',
      'create schema intruder',
      'create role intruder',
    ]) {
      const code = await sql
        .raw(ddl)
        .execute(app.db)
        .then(
          () => 'allowed',
          (error: { code?: string }) => error.code,
        );
      expect(code, ddl).toBe('42501');
    }
  });
});

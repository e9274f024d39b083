/**
 * Least privilege (migrations/0004_roles.ts, docs/security.md): the owner migrates, the loader loads and
 * does nothing else, the analyst only reads; with row-level security switched on, a tenant login sees
 * only its org, directly and through the views, while the loader still loads every org (the attempts
 * to get around it are in tenant-isolation.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawItem } from '../../src/pipeline/batch.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { ADMIN_URL, asLogin, asRole, createTestDatabase, type TestDatabase } from '../helpers/pg.ts';
import { sandboxItems } from '../helpers/sandbox-items.ts';

async function denied(db: Warehouse, statement: string): Promise<string> {
  try {
    await sql.raw(statement).execute(db.db);
  } catch (error) {
    return (error as { code?: string }).code ?? 'error';
  }
  return 'allowed';
}

const items = (sandbox: Sandbox): RawItem[] => [
  ...sandboxItems(sandbox),
  { kind: 'unparseable', text: '{"id": "cut', reason: 'truncated JSON' },
];

describe('least-privilege roles', () => {
  let db: TestDatabase;
  let sandbox: Sandbox;
  let loader: Warehouse;
  let analyst: Warehouse;

  beforeAll(async () => {
    db = await createTestDatabase();
    sandbox = await startSandbox({ seed: 41, users: 2, days: 5 });
    loader = await openWarehouse({ databaseUrl: asRole(db.url, 'validic_loader'), maxConnections: 2 });
    analyst = await openWarehouse({ databaseUrl: asRole(db.url, 'validic_analyst'), maxConnections: 2 });
  });
  afterAll(async () => {
    await loader?.close();
    await analyst?.close();
    await sandbox?.close();
    await db?.drop();
  });

  it('creates the three roles without login', async () => {
    const roles = await sql<{ rolname: string; rolcanlogin: boolean; rolsuper: boolean }>`
      select rolname, rolcanlogin, rolsuper from pg_roles
      where rolname in ('validic_owner', 'validic_loader', 'validic_analyst') order by rolname`.execute(
      db.warehouse.db,
    );
    expect(roles.rows).toEqual([
      { rolname: 'validic_analyst', rolcanlogin: false, rolsuper: false },
      { rolname: 'validic_loader', rolcanlogin: false, rolsuper: false },
      { rolname: 'validic_owner', rolcanlogin: false, rolsuper: false },
    ]);
    const owners = await sql<{ owner: string; n: number }>`
      select pg_get_userbyid(c.relowner) as owner, count(*)::int as n from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('validic', 'validic_sync') and c.relkind in ('r', 'v') group by 1`.execute(
      db.warehouse.db,
    );
    expect(owners.rows.map((r) => r.owner)).toEqual(['validic_owner']);
  });

  it('lets the loader load a batch, and nothing else', async () => {
    const batch = { orgId: sandbox.orgId, arrivedVia: 'poll' as const, items: items(sandbox) };
    const result = await applyBatch(loader, batch, { cursors: [{ key: 'test:cursor', value: { at: 1 } }] });
    expect(result.inserted).toBeGreaterThan(0);
    expect(result.quarantined).toBe(1);
    const again = await applyBatch(loader, batch);
    expect(again.inserted + again.updated).toBe(0);
    const who = await sql<{ u: string }>`select current_user as u`.execute(loader.db);
    expect(who.rows[0]!.u).toBe('validic_loader');

    for (const ddl of [
      'create table validic.intruder (id int)',
      'create table validic_sync.intruder (id int)',
      'create table public.intruder (id int)',
      'alter table validic.records add column intruder int',
      'drop table validic.record_versions',
      'truncate validic.records',
      'create schema intruder',
      'create role intruder',
      'create view validic.intruder as select 1',
    ])
      expect(await denied(loader, ddl), ddl).toMatch(/^42501$/);
  });

  it('lets the analyst read validic and write nothing', async () => {
    const n = await sql<{ n: number }>`select count(*)::int as n from validic.records`.execute(analyst.db);
    expect(n.rows[0]!.n).toBeGreaterThan(0);
    await sql`select * from validic.daily_metrics limit 1`.execute(analyst.db);
    for (const statement of [
      `insert into validic.users (org_id, uid) values ('x', 'y')`,
      `update validic.records set checksum = 'x'`,
      'delete from validic.connection_events',
      'truncate validic.records',
      'create table validic.intruder (id int)',
      'select * from validic_sync.checkpoints',
      `insert into validic_sync.quarantine (org_id) values ('x')`,
    ])
      expect(await denied(analyst, statement), statement).toBe('42501');
  });

  it('lets the owner change the schema', async () => {
    await db.warehouse.transaction(async (tx) => {
      await sql`set local role validic_owner`.execute(tx.db);
      await sql`create table validic.owner_probe (id int)`.execute(tx.db);
      await sql`drop table validic.owner_probe`.execute(tx.db);
    });
  });

  it('runs a whole backfill as the loader (start-up migration check included)', async () => {
    const other = await createTestDatabase();
    try {
      const env = sandboxEnv(sandbox, { DATABASE_URL: asRole(other.url, 'validic_loader') });
      const to = day(0);
      const from = day(30);
      const result = await runCli(['backfill', '--from', from, '--to', to], env);
      expect(result.code, result.stderr).toBe(0);
      expect(await compareWithTruth(other.warehouse, sandbox)).toEqual(NO_DIFFERENCES);
    } finally {
      await other.drop();
    }
  });
});

describe('row-level security per org', () => {
  let db: TestDatabase;
  let loader: Warehouse;
  const tenant = `vs_tenant_${randomBytes(4).toString('hex')}`;
  const sandboxes: Sandbox[] = [];

  /** A connection as the tenant's own login role (trust auth on the test cluster). */
  async function asTenant<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: asLogin(db.url, tenant) });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    loader = await openWarehouse({ databaseUrl: asRole(db.url, 'validic_loader'), maxConnections: 2 });
    sandboxes.push(await startSandbox({ seed: 51, users: 2, days: 4, orgId: 'org-a' }));
    sandboxes.push(await startSandbox({ seed: 52, users: 2, days: 4, orgId: 'org-b' }));
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create role ${tenant} login in role validic_analyst`);
    await admin.end();
    // The owner maps the tenant to its org (migration 0006; test/security/tenant-isolation.test.ts).
    await db.warehouse.transaction(async (tx) => {
      await sql`set local role validic_owner`.execute(tx.db);
      await sql`select validic_sync.grant_tenant(${tenant}, 'org-a')`.execute(tx.db);
    });
  });
  afterAll(async () => {
    await loader?.close();
    for (const s of sandboxes) await s.close();
    await db?.drop();
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`drop role if exists ${tenant}`);
    await admin.end();
  });

  it('is off by default, and once on a tenant sees only its org while the loader loads every org', async () => {
    const off = await sql<{ n: number }>`
      select count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'validic' and c.relrowsecurity`.execute(db.warehouse.db);
    expect(off.rows[0]!.n).toBe(0);

    const enabled = await sql<{ t: string }>`select validic_sync.enable_row_level_security() as t`.execute(
      db.warehouse.db,
    );
    expect(enabled.rows.map((r) => r.t)).toEqual(
      expect.arrayContaining(['records', 'users', 'record_versions']),
    );
    const forced = await sql<{ relname: string; relforcerowsecurity: boolean }>`
      select c.relname, c.relforcerowsecurity from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'validic' and c.relkind = 'r'`.execute(db.warehouse.db);
    for (const row of forced.rows) expect(row.relforcerowsecurity, row.relname).toBe(true);

    // The loader loads both orgs with RLS forced on.
    for (const sandbox of sandboxes) {
      const batch = {
        orgId: sandbox.orgId,
        arrivedVia: 'poll' as const,
        items: [
          ...sandbox.truth.users().map((raw): RawItem => ({ kind: 'user', raw })),
          ...sandbox.truth.records().map((raw): RawItem => ({ kind: 'record', raw })),
        ],
      };
      expect((await applyBatch(loader, batch)).inserted).toBeGreaterThan(0);
    }
    const all = await sql<{ org_id: string }>`select distinct org_id from validic.records order by 1`.execute(
      loader.db,
    );
    expect(all.rows.map((r) => r.org_id)).toEqual(['org-a', 'org-b']);

    await asTenant(async (client) => {
      const orgs = await client.query('select distinct org_id from validic.records');
      expect(orgs.rows).toEqual([{ org_id: 'org-a' }]);
      const viaView = await client.query('select distinct org_id from validic.data_freshness');
      expect(viaView.rows.every((r: { org_id: string }) => r.org_id === 'org-a')).toBe(true);
      const users = await client.query('select distinct org_id from validic.users');
      expect(users.rows).toEqual([{ org_id: 'org-a' }]);
      await expect(client.query(`delete from validic.records where org_id = 'org-a'`)).rejects.toMatchObject({
        code: '42501',
      });
    });

    await sql`select validic_sync.disable_row_level_security()`.execute(db.warehouse.db);
    await asTenant(async (client) => {
      const orgs = await client.query('select distinct org_id from validic.records order by 1');
      expect(orgs.rows).toEqual([{ org_id: 'org-a' }, { org_id: 'org-b' }]);
    });
  });
});

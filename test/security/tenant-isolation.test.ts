/**
 * Tenant isolation (migrations/0006_tenant_roles.ts, docs/security.md): with row-level security on, a
 * tenant role reads exactly its org's rows on every table and view an analyst can reach, and nothing a
 * session can set (`validic.org_id`, `set_config`, `SET ROLE`, `row_security`, the mapping functions)
 * reaches another org. Roles are cluster-wide, so every role here carries a random suffix.
 */
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { type Migration, type MigrationProvider, Migrator } from 'kysely/migration';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { FolderMigrationProvider, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';
import {
  ADMIN_URL,
  asLogin,
  asRole,
  createEmptyDatabase,
  createTestDatabase,
  type TestDatabase,
  withClient,
} from '../helpers/pg.ts';
import { sandboxItems } from '../helpers/sandbox-items.ts';

const suffix = randomBytes(4).toString('hex');
const role = (name: string) => `vs_${name}_${suffix}`;
const TENANT_A = role('tenant_a');
const TENANT_B = role('tenant_b');
const GROUP_C = role('group_c');
const PERSON_C = role('person_c');
const UNMAPPED = role('unmapped');
const CREATOR = role('creator');
const ALL_ROLES = [TENANT_A, TENANT_B, PERSON_C, GROUP_C, UNMAPPED, CREATOR];
const ORGS = ['org-a', 'org-b', 'org-c'];

async function sqlState(client: pg.Client, statement: string): Promise<string> {
  try {
    await client.query(statement);
    return 'allowed';
  } catch (error) {
    return (error as { code?: string }).code ?? 'error';
  }
}

/** Relations of any user schema that validic_analyst may SELECT: what a tenant can reach. */
async function analystRelations(db: Kysely<any>) {
  const { rows } = await sql<{
    name: string;
    relkind: string;
    rls: boolean;
    forced: boolean;
    invoker: boolean;
  }>`
    select format('%I.%I', n.nspname, c.relname) as name, c.relkind::text as relkind,
      c.relrowsecurity as rls, c.relforcerowsecurity as forced,
      coalesce('security_invoker=true' = any (c.reloptions), false) as invoker
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\_%'
      and c.relkind in ('r', 'p', 'v', 'm', 'f')
      and has_table_privilege('validic_analyst', c.oid, 'SELECT')
    order by 1`.execute(db);
  return rows;
}

/** Rows per org of every relation, as a map name → org → count. */
async function orgCounts(
  client: pg.Client,
  relations: string[],
): Promise<Record<string, Record<string, number>>> {
  const counts: Record<string, Record<string, number>> = {};
  for (const name of relations) {
    const { rows } = await client.query<{ org_id: string; n: number }>(
      `select org_id, count(*)::int as n from ${name} group by org_id order by org_id`,
    );
    counts[name] = Object.fromEntries(rows.map((r) => [r.org_id, r.n]));
  }
  return counts;
}

/** Keeps only the given orgs of every relation's counts (and relations with none of them as {}). */
const only = (counts: Record<string, Record<string, number>>, orgs: string[]) =>
  Object.fromEntries(
    Object.entries(counts).map(([name, byOrg]) => [
      name,
      Object.fromEntries(Object.entries(byOrg).filter(([org]) => orgs.includes(org))),
    ]),
  );

describe('tenant isolation with row-level security on', () => {
  let db: TestDatabase;
  let loader: Warehouse;
  const sandboxes: Sandbox[] = [];
  let relations: string[];
  /** Every org's rows as the superuser (no RLS) sees them. */
  let truth: Record<string, Record<string, number>>;

  const admin = <T>(fn: (client: pg.Client) => Promise<T>) => withClient(ADMIN_URL, fn);
  /** As validic_owner in the test database (what an operator does to manage tenants). */
  const asOwner = <T>(fn: (client: pg.Client) => Promise<T>) =>
    withClient(asRole(db.url, 'validic_owner'), fn);

  beforeAll(async () => {
    db = await createTestDatabase();
    loader = await openWarehouse({ databaseUrl: asRole(db.url, 'validic_loader'), maxConnections: 2 });
    for (const [i, orgId] of ORGS.entries())
      sandboxes.push(await startSandbox({ seed: 61 + i, users: 2, days: 4, orgId }));
    await admin(async (client) => {
      await client.query(`create role ${TENANT_A} login in role validic_analyst`);
      await client.query(`create role ${TENANT_B} login in role validic_analyst`);
      await client.query(`create role ${GROUP_C} nologin`);
      await client.query(`create role ${PERSON_C} login in role validic_analyst, ${GROUP_C}`);
      await client.query(`create role ${UNMAPPED} login in role validic_analyst`);
      await client.query(`create role ${CREATOR} login createrole in role validic_analyst`);
    });
    // RLS on before loading: the loader must load every org through its policy.
    await asOwner((client) => client.query('select validic_sync.enable_row_level_security()'));
    for (const sandbox of sandboxes)
      await applyBatch(loader, { orgId: sandbox.orgId, arrivedVia: 'poll', items: sandboxItems(sandbox) });
    await asOwner(async (client) => {
      await client.query('select validic_sync.grant_tenant($1, $2)', [TENANT_A, 'org-a']);
      await client.query('select validic_sync.grant_tenant($1, $2)', [TENANT_B, 'org-b']);
      await client.query('select validic_sync.grant_tenant($1, $2)', [GROUP_C, 'org-c']);
    });
    relations = (await analystRelations(db.warehouse.db)).map((r) => r.name);
    truth = await withClient(db.url, (client) => orgCounts(client, relations));
  });
  afterAll(async () => {
    await loader?.close();
    for (const s of sandboxes) await s.close();
    await db?.drop();
    await admin(async (client) => {
      for (const name of ALL_ROLES) await client.query(`drop role if exists ${name}`);
    });
  });

  it('guards every table and view an analyst can reach (forced RLS or security_invoker), and has data of each org in them', async () => {
    const reachable = await analystRelations(db.warehouse.db);
    expect(reachable.length).toBeGreaterThan(10);
    for (const r of reachable) {
      if (r.relkind === 'v') expect(r.invoker, `${r.name} is a security_invoker view`).toBe(true);
      else {
        expect(['r', 'p'], `${r.name} is a table (a materialized view would bypass RLS)`).toContain(
          r.relkind,
        );
        expect([r.rls, r.forced], `${r.name} has forced row-level security`).toEqual([true, true]);
      }
    }
    // The superuser sees all three orgs in the main tables, so there is something to leak.
    for (const name of [
      'validic.records',
      'validic.users',
      'validic.connection_events',
      'validic.legacy_records',
    ])
      expect(Object.keys(truth[name]!), name).toEqual(ORGS);
  });

  it("gives a tenant exactly its org's rows on every table and view", async () => {
    await withClient(asLogin(db.url, TENANT_A), async (client) => {
      expect(await orgCounts(client, relations)).toEqual(only(truth, ['org-a']));
    });
    await withClient(asLogin(db.url, TENANT_B), async (client) => {
      expect(await orgCounts(client, relations)).toEqual(only(truth, ['org-b']));
    });
  });

  it("gives the members of a mapped group role the group's org", async () => {
    await withClient(asLogin(db.url, PERSON_C), async (client) => {
      expect(await orgCounts(client, relations)).toEqual(only(truth, ['org-c']));
    });
  });

  it('shows nothing to a role without a mapping, validic_analyst itself included', async () => {
    await withClient(asLogin(db.url, UNMAPPED), async (client) => {
      expect(await orgCounts(client, relations)).toEqual(only(truth, []));
    });
    await withClient(asRole(db.url, 'validic_analyst'), async (client) => {
      expect(await orgCounts(client, relations)).toEqual(only(truth, []));
    });
  });

  it('lets no setting, role switch or function reach another org', async () => {
    await withClient(asLogin(db.url, TENANT_A), async (client) => {
      const ownOnly = only(truth, ['org-a']);
      await client.query(`set validic.org_id = 'org-b'`);
      expect(await orgCounts(client, relations)).toEqual(ownOnly);
      await client.query(`select set_config('validic.org_id', 'org-b', false)`);
      expect(await orgCounts(client, relations)).toEqual(ownOnly);

      // A role the login is a member of, but with no mapping: fewer rows, never more.
      await client.query('set role validic_analyst');
      expect(await orgCounts(client, relations)).toEqual(only(truth, []));
      await client.query('reset role');
      expect(await orgCounts(client, relations)).toEqual(ownOnly);

      // Not a member of the other tenant's roles, nor allowed to change who it is.
      expect(await sqlState(client, `set role ${TENANT_B}`)).toBe('42501');
      expect(await sqlState(client, `set session authorization ${TENANT_B}`)).toBe('42501');
      // Switching RLS off makes a query that RLS would filter fail instead of reading everything.
      await client.query('set row_security = off');
      expect(await sqlState(client, 'select count(*) from validic.records')).toBe('42501');
      await client.query('reset row_security');

      // The mapping: neither readable, writable nor reachable through the functions.
      for (const statement of [
        'select * from validic_sync.tenant_roles',
        `insert into validic_sync.tenant_roles values ('${TENANT_A}', 'org-b')`,
        `select validic_sync.grant_tenant('${TENANT_A}', 'org-b')`,
        `select validic_sync.revoke_tenant('${TENANT_B}')`,
        'select validic_sync.disable_row_level_security()',
        `alter table validic.records no force row level security`,
        `drop policy org_isolation on validic.records`,
      ])
        expect(await sqlState(client, statement), statement).toBe('42501');
      expect(await orgCounts(client, relations)).toEqual(ownOnly);

      // Planner statistics would show other orgs' values: pg_stats hides them from an RLS-bound role.
      await sql`analyze validic.records, validic.users`.execute(db.warehouse.db);
      const stats = await client.query(
        `select count(*)::int as n from pg_stats where schemaname = 'validic' and tablename in ('records', 'users')`,
      );
      expect(stats.rows[0].n).toBe(0);
    });
  });

  it("answers the mapping function only for the login's own roles", async () => {
    // With USAGE on the schema (which tenants do not have), a direct call still reveals nothing.
    await withClient(db.url, (client) => client.query(`grant usage on schema validic_sync to ${TENANT_A}`));
    try {
      await withClient(asLogin(db.url, TENANT_A), async (client) => {
        const call = (name: string) =>
          client.query<{ orgs: string[] }>('select validic_sync.tenant_org_ids($1) as orgs', [name]);
        expect((await call(TENANT_A)).rows[0]!.orgs).toEqual(['org-a']);
        expect((await call(TENANT_B)).rows[0]!.orgs).toEqual([]);
        expect((await call(GROUP_C)).rows[0]!.orgs).toEqual([]);
      });
    } finally {
      await withClient(db.url, (client) =>
        client.query(`revoke usage on schema validic_sync from ${TENANT_A}`),
      );
    }
  });

  it('lets the loader read and write every org, and the owner re-map tenants, refusing roles a mapping cannot confine', async () => {
    const [b] = sandboxes.slice(1);
    const again = await applyBatch(loader, {
      orgId: b!.orgId,
      arrivedVia: 'replay',
      items: sandboxItems(b!),
    });
    expect(again.inserted + again.updated).toBe(0); // dedupe saw org-b's rows: the loader reads them
    const orgs = await sql<{ org_id: string }>`select distinct org_id from validic.users order by 1`.execute(
      loader.db,
    );
    expect(orgs.rows.map((r) => r.org_id)).toEqual(ORGS);

    await asOwner(async (client) => {
      const removed = await client.query('select validic_sync.revoke_tenant($1) as n', [TENANT_B]);
      expect(removed.rows[0].n).toBe(1);
      for (const shared of ['validic_analyst', 'validic_loader', 'validic_owner', CREATOR])
        expect(await sqlState(client, `select validic_sync.grant_tenant('${shared}', 'org-b')`), shared).toBe(
          'P0001',
        );
    });
    await withClient(asLogin(db.url, TENANT_B), async (client) => {
      expect(await orgCounts(client, relations)).toEqual(only(truth, []));
    });
    await asOwner((client) => client.query('select validic_sync.grant_tenant($1, $2)', [TENANT_B, 'org-b']));
  });
});

/** Only the migrations before `last` (inclusive): a database as an older release left it. */
class MigrationsUpTo implements MigrationProvider {
  readonly #last: string;
  constructor(last: string) {
    this.#last = last;
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    const all = await new FolderMigrationProvider().getMigrations();
    return Object.fromEntries(Object.entries(all).filter(([name]) => name <= this.#last));
  }
}

describe('migration 0006 on a database with 0004-style tenants', () => {
  let db: TestDatabase;
  const tenant = role('legacy_tenant');

  beforeAll(async () => {
    db = await createEmptyDatabase();
    await withClient(ADMIN_URL, async (client) => {
      await client.query(`create role ${tenant} login in role validic_analyst`);
      await client.query(`alter role ${tenant} in database ${db.name} set validic.org_id = 'org-a'`);
    });
  });
  afterAll(async () => {
    await db?.drop();
    await withClient(ADMIN_URL, (client) => client.query(`drop role if exists ${tenant}`));
  });

  const tenantSees = () =>
    withClient(asLogin(db.url, tenant), async (client) => {
      await client.query(`set validic.org_id = 'org-b'`);
      const { rows } = await client.query<{ org_id: string }>(
        'select distinct org_id from validic.users order by 1',
      );
      return rows.map((r) => r.org_id);
    });

  it('carries the org setting over into a mapping, switches the policies, and goes down and up again', async () => {
    await migrateToLatest(db.warehouse.db, new MigrationsUpTo('0005_raw_lz4_compression'));
    await sql`select validic_sync.enable_row_level_security()`.execute(db.warehouse.db);
    for (const orgId of ['org-a', 'org-b'])
      await sql`insert into validic.users (org_id, uid, raw) values (${orgId}, 'u1', '{}')`.execute(
        db.warehouse.db,
      );
    // 0004's policy follows the setting, which the tenant changed.
    expect(await tenantSees()).toEqual(['org-b']);

    expect(await migrateToLatest(db.warehouse.db)).toContain('0006_tenant_roles');
    const mapped = await sql<{ role: string; org_id: string }>`
      select role::text as role, org_id from validic_sync.tenant_roles`.execute(db.warehouse.db);
    expect(mapped.rows).toEqual([{ role: tenant, org_id: 'org-a' }]);
    expect(await tenantSees()).toEqual(['org-a']);

    const migrator = new Migrator({ db: db.warehouse.db, provider: new FolderMigrationProvider() });
    const down = await migrator.migrateTo('0005_raw_lz4_compression');
    expect(down.error).toBeUndefined();
    expect(await tenantSees()).toEqual(['org-b']);
    const gone = await sql<{ n: number }>`
      select count(*)::int as n from pg_class where relname = 'tenant_roles'`.execute(db.warehouse.db);
    expect(gone.rows[0]!.n).toBe(0);

    expect(await migrateToLatest(db.warehouse.db)).toContain('0006_tenant_roles');
    expect(await tenantSees()).toEqual(['org-a']);
  });

  it('guards a table and a view that a later migration adds, once it calls refresh_row_level_security', async () => {
    const tenantReads = (relation: string) =>
      withClient(asLogin(db.url, tenant), async (client) => {
        const { rows } = await client.query<{ org_id: string }>(
          `select distinct org_id from ${relation} order by 1`,
        );
        return rows.map((r) => r.org_id);
      });
    await db.warehouse.transaction(async (tx) => {
      await sql`set local role validic_owner`.execute(tx.db);
      await sql`create table validic.later (org_id text not null)`.execute(tx.db);
      await sql`insert into validic.later values ('org-a'), ('org-b')`.execute(tx.db);
      await sql`create view validic.later_users as select org_id, uid from validic.users`.execute(tx.db);
    });
    // Analysts read new tables by default: without the refresh, both would show every org.
    expect(await tenantReads('validic.later')).toEqual(['org-a', 'org-b']);
    expect(await tenantReads('validic.later_users')).toEqual(['org-a', 'org-b']);
    await db.warehouse.transaction(async (tx) => {
      await sql`set local role validic_owner`.execute(tx.db);
      await sql`select validic_sync.refresh_row_level_security()`.execute(tx.db);
    });
    expect(await tenantReads('validic.later')).toEqual(['org-a']);
    expect(await tenantReads('validic.later_users')).toEqual(['org-a']);
  });
});

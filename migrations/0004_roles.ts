/**
 * 0004: least-privilege roles, and optional row-level security per org (docs/security.md).
 *
 * - `validic_owner` owns both schemas and everything in them (and kysely's migration tables): the role
 *   to migrate as. `validic_loader` may read and write the named tables the loader and jobs write, use
 *   their sequences and create TEMP staging tables, and nothing else (no DDL). `validic_analyst`
 *   (created in 0001) reads `validic` only. All three are NOLOGIN: operators grant them to login roles.
 * - Row-level security is OFF. `select validic_sync.enable_row_level_security()` turns it on for every
 *   table of `validic` that has `org_id` (ENABLE + FORCE, a policy on the `validic.org_id` setting, and
 *   full access for the loader and owner), and makes the views security_invoker so they cannot be used
 *   to read around it; `validic_sync.disable_row_level_security()` turns it off again.
 *
 * Roles are cluster-wide while migrations run per database, so two databases (or processes) may create
 * them at the same moment: duplicate_object / unique_violation from a concurrent creator mean "exists".
 * Frozen in time: never imports application code.
 */
import { type Kysely, sql } from 'kysely';

/** Tables the loader, the ledger, checkpoints, quarantine, runs and push handling write. */
const LOADER_TABLES = [
  'validic.users',
  'validic.records',
  'validic.record_metrics',
  'validic.record_versions',
  'validic.intraday_series',
  'validic.nutrition_segments',
  'validic.nutrition_segment_metrics',
  'validic.nutrition_food',
  'validic.nutrition_food_metrics',
  'validic.connection_events',
  'validic.legacy_records',
  'validic_sync.checkpoints',
  'validic_sync.backfill_windows',
  'validic_sync.quarantine',
  'validic_sync.runs',
  'validic_sync.push_notifications',
];

const createRole = (name: string) => `do $$ begin
  if not exists (select 1 from pg_roles where rolname = '${name}') then
    create role ${name} nologin;
  end if;
exception when duplicate_object or unique_violation then null;
end $$`;

/** Every table, view and standalone sequence of both schemas (and kysely's tables) to validic_owner. */
const transferOwnership = `do $$
declare rel record;
begin
  -- ALTER … OWNER needs membership of the new owner unless we are superuser (a CREATEROLE deploy user).
  if not pg_has_role(current_user, 'validic_owner', 'MEMBER') then
    execute format('grant validic_owner to %I', current_user);
  end if;
  alter schema validic owner to validic_owner;
  alter schema validic_sync owner to validic_owner;
  for rel in
    select c.oid::regclass as name, c.relkind
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where (n.nspname in ('validic', 'validic_sync') and c.relkind in ('r', 'p', 'v', 'm', 'S'))
        or (n.nspname = current_schema() and c.relname in ('kysely_migration', 'kysely_migration_lock'))
  loop
    -- Sequences that belong to a column (identity, serial) follow their table.
    if rel.relkind = 'S' and exists (
      select 1 from pg_depend d where d.objid = rel.name::oid and d.deptype in ('a', 'i')
    ) then
      continue;
    end if;
    execute format('alter %s %s owner to validic_owner',
      case rel.relkind when 'S' then 'sequence' when 'v' then 'view' when 'm' then 'materialized view' else 'table' end,
      rel.name);
  end loop;
end $$`;

const loaderGrants = [
  'grant usage on schema validic, validic_sync to validic_loader',
  `grant select, insert, update, delete on ${LOADER_TABLES.join(', ')} to validic_loader`,
  'grant usage on all sequences in schema validic, validic_sync to validic_loader',
  // Staging tables are session temp tables.
  `do $$ begin execute format('grant temp on database %I to validic_loader', current_database()); end $$`,
  // Every process checks for pending migrations at start-up: reading kysely's tables is enough for that.
  `do $$ begin
     execute format('grant select on %I.kysely_migration, %I.kysely_migration_lock to validic_loader',
       current_schema(), current_schema());
   exception when undefined_table then null;
   end $$`,
];

const analystGrants = [
  'grant usage on schema validic to validic_analyst',
  'grant select on all tables in schema validic to validic_analyst',
  // Tables and views that later migrations create (as validic_owner) are readable by analysts too.
  'alter default privileges for role validic_owner in schema validic grant select on tables to validic_analyst',
];

/**
 * Row-level security, off until asked for. The policy reads the `validic.org_id` setting, which the
 * connection (a tenant's login role via ALTER ROLE … SET, or a pooler) sets; unset means no rows.
 */
const rlsFunctions = [
  `create or replace function validic_sync.enable_row_level_security() returns setof text
   language plpgsql as $fn$
   declare t record;
   begin
     for t in
       select c.relname from pg_class c
         join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'validic' and c.relkind in ('r', 'p')
          and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'org_id' and not a.attisdropped)
        order by c.relname
     loop
       execute format('alter table validic.%I enable row level security', t.relname);
       execute format('alter table validic.%I force row level security', t.relname);
       execute format('drop policy if exists org_isolation on validic.%I', t.relname);
       execute format($p$create policy org_isolation on validic.%I
         using (org_id = current_setting('validic.org_id', true))
         with check (org_id = current_setting('validic.org_id', true))$p$, t.relname);
       execute format('drop policy if exists sync_all_orgs on validic.%I', t.relname);
       execute format('create policy sync_all_orgs on validic.%I to validic_loader, validic_owner using (true) with check (true)', t.relname);
       return next t.relname;
     end loop;
     -- A view runs with its owner's rights unless security_invoker: without this, a view would read
     -- every org through the owner's sync_all_orgs policy.
     for t in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
               where n.nspname = 'validic' and c.relkind = 'v'
     loop
       execute format('alter view validic.%I set (security_invoker = true)', t.relname);
     end loop;
   end $fn$`,
  `create or replace function validic_sync.disable_row_level_security() returns setof text
   language plpgsql as $fn$
   declare t record;
   begin
     for t in
       select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'validic' and c.relkind in ('r', 'p') and c.relrowsecurity
        order by c.relname
     loop
       execute format('drop policy if exists org_isolation on validic.%I', t.relname);
       execute format('drop policy if exists sync_all_orgs on validic.%I', t.relname);
       execute format('alter table validic.%I no force row level security', t.relname);
       execute format('alter table validic.%I disable row level security', t.relname);
       return next t.relname;
     end loop;
     for t in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
               where n.nspname = 'validic' and c.relkind = 'v'
     loop
       execute format('alter view validic.%I reset (security_invoker)', t.relname);
     end loop;
   end $fn$`,
  'revoke all on function validic_sync.enable_row_level_security(), validic_sync.disable_row_level_security() from public',
  'alter function validic_sync.enable_row_level_security() owner to validic_owner',
  'alter function validic_sync.disable_row_level_security() owner to validic_owner',
];

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    createRole('validic_owner'),
    createRole('validic_loader'),
    createRole('validic_analyst'),
    transferOwnership,
    ...loaderGrants,
    ...analystGrants,
    ...rlsFunctions,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  // Roles are shared by every database of the cluster, so they stay; this database's grants go.
  for (const statement of [
    'select validic_sync.disable_row_level_security()',
    'drop function if exists validic_sync.enable_row_level_security()',
    'drop function if exists validic_sync.disable_row_level_security()',
    'revoke all on all tables in schema validic, validic_sync from validic_loader',
    'revoke all on all sequences in schema validic, validic_sync from validic_loader',
    'revoke usage on schema validic, validic_sync from validic_loader',
    `do $$ begin execute format('revoke temp on database %I from validic_loader', current_database()); end $$`,
  ]) {
    await sql.raw(statement).execute(db);
  }
}

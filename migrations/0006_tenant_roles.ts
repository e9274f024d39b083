/**
 * 0006: row-level security reads which orgs a role may see from a table the owner maintains, instead of
 * the `validic.org_id` setting (docs/security.md, "Row-level security per organization").
 *
 * Any session may `SET validic.org_id` (or call `set_config`), so 0004's policy only kept honest
 * tenants apart. Now `validic_sync.tenant_roles` maps roles to orgs; only `validic_owner` can change it
 * (`validic_sync.grant_tenant(role, org)` / `revoke_tenant`). The policy reads it through
 * `validic_sync.tenant_org_ids(current_user)`, a SECURITY DEFINER function owned by the owner (so
 * tenants need no rights on the table) with its search_path pinned:
 *
 * - A role sees the orgs mapped to any role it has the privileges of (itself, or a group role it
 *   inherits), so a tenant can be a group role its people's logins are granted.
 * - `SET ROLE` can only narrow that: the target must be a role the login is a member of. The function
 *   answers only for roles the session's login (session_user) belongs to, so calling it with another
 *   tenant's name returns nothing.
 * - Unmapped roles (`validic_analyst` itself among them) see no rows; the loader and owner keep
 *   `sync_all_orgs`.
 *
 * `validic_sync.refresh_row_level_security()` re-applies the policies only where they are on: a later
 * migration that adds a table or view to `validic` calls it last.
 *
 * Roles are stored as `regrole` (their oid): a dropped and re-created role of the same name does not
 * inherit the old mapping. Existing `ALTER ROLE … SET validic.org_id` settings become mappings, and a
 * database with row-level security on gets the new policies at once.
 *
 * Frozen in time: never imports application code.
 */
import { type Kysely, sql } from 'kysely';

/** 0004's policy expression, restored by `down`. */
const SETTING_POLICY = `org_id = current_setting('validic.org_id', true)`;
/** The scalar subquery makes the lookup an InitPlan: one call per statement, not one per row. */
const MAPPING_POLICY = `org_id = any ((select validic_sync.tenant_org_ids(current_user))::text[])`;

/** 0004's enable function with the policy expression as a parameter (up and down differ only there). */
const enableFunction = (
  policy: string,
) => `create or replace function validic_sync.enable_row_level_security()
   returns setof text language plpgsql as $fn$
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
         using (${policy})
         with check (${policy})$p$, t.relname);
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
   end $fn$`;

/**
 * Re-applies the policies where row-level security is on, and does nothing where it is off. A later
 * migration that adds a table or view to `validic` calls it last, so a warehouse with RLS on never has
 * a new table without policies (analysts get SELECT on new tables by default) or a view that reads
 * with its owner's rights.
 */
const refreshFunction = `create or replace function validic_sync.refresh_row_level_security() returns setof text
   language plpgsql set search_path = pg_catalog, pg_temp as $fn$
   begin
     if exists (select 1 from pg_policy p join pg_class c on c.oid = p.polrelid
                 join pg_namespace n on n.oid = c.relnamespace
                where n.nspname = 'validic' and p.polname = 'org_isolation') then
       return query select validic_sync.enable_row_level_security();
     end if;
   end $fn$`;

const tenantStatements = [
  `create table validic_sync.tenant_roles (
     role regrole not null,
     org_id text not null check (org_id <> ''),
     primary key (role, org_id)
   )`,
  `comment on table validic_sync.tenant_roles is 'Which orgs each role may read when row-level security is on. Change it with validic_sync.grant_tenant / revoke_tenant.'`,
  `comment on column validic_sync.tenant_roles.role is 'A login or group role of the tenant; its members (with INHERIT) read the org too.'`,
  `comment on column validic_sync.tenant_roles.org_id is 'Validic organization id the role may read.'`,
  'alter table validic_sync.tenant_roles owner to validic_owner',

  // SECURITY DEFINER: inside it current_user is the owner, hence the role as an argument. It answers
  // only for roles the login belongs to, so it cannot be used to learn another tenant's org ids.
  `create function validic_sync.tenant_org_ids(member name) returns text[]
   language sql stable security definer
   set search_path = pg_catalog, pg_temp
   as $fn$
     select coalesce(array_agg(distinct t.org_id), '{}')
       from validic_sync.tenant_roles t
      where pg_has_role(session_user, member, 'MEMBER')
        and pg_has_role(member, t.role, 'USAGE')
   $fn$`,
  'alter function validic_sync.tenant_org_ids(name) owner to validic_owner',
  'revoke all on function validic_sync.tenant_org_ids(name) from public',
  // Every role a policy is evaluated for: tenants (through validic_analyst) and the loader.
  'grant execute on function validic_sync.tenant_org_ids(name) to validic_analyst, validic_loader',

  `create function validic_sync.grant_tenant(tenant regrole, org text) returns void
   language plpgsql set search_path = pg_catalog, pg_temp as $fn$
   declare r pg_roles;
   begin
     select * into r from pg_roles where oid = tenant;
     if not found then
       raise exception 'validic_sync.grant_tenant: no role with oid %', tenant::oid;
     end if;
     if r.rolname in ('validic_owner', 'validic_loader', 'validic_analyst') then
       raise exception 'validic_sync.grant_tenant: % is a shared role; map a role of the tenant''s own', r.rolname;
     end if;
     -- Superusers and BYPASSRLS ignore row-level security; CREATEROLE may grant itself other tenants' roles.
     if r.rolsuper or r.rolbypassrls or r.rolcreaterole then
       raise exception 'validic_sync.grant_tenant: % is SUPERUSER, BYPASSRLS or CREATEROLE, so a mapping would not confine it', r.rolname;
     end if;
     if pg_has_role(tenant, 'validic_loader', 'MEMBER') or pg_has_role(tenant, 'validic_owner', 'MEMBER') then
       raise exception 'validic_sync.grant_tenant: % is a member of validic_loader or validic_owner, which read every org', r.rolname;
     end if;
     insert into validic_sync.tenant_roles (role, org_id) values (tenant, org) on conflict do nothing;
   end $fn$`,
  `create function validic_sync.revoke_tenant(tenant regrole, org text default null) returns integer
   language plpgsql set search_path = pg_catalog, pg_temp as $fn$
   declare n integer;
   begin
     delete from validic_sync.tenant_roles where role = tenant and (org is null or org_id = org);
     get diagnostics n = row_count;
     return n;
   end $fn$`,
  'alter function validic_sync.grant_tenant(regrole, text) owner to validic_owner',
  'alter function validic_sync.revoke_tenant(regrole, text) owner to validic_owner',
  'revoke all on function validic_sync.grant_tenant(regrole, text), validic_sync.revoke_tenant(regrole, text) from public',

  // Roles that 0004's docs told operators to give `validic.org_id` (for this database or all) keep it.
  `do $$
   declare s record;
   begin
     for s in
       select distinct d.setrole::regrole as tenant, substr(c.setting, length('validic.org_id=') + 1) as org
         from pg_db_role_setting d cross join lateral unnest(d.setconfig) as c(setting)
        where d.setrole <> 0
          and d.setdatabase in (0, (select oid from pg_database where datname = current_database()))
          and c.setting like 'validic.org_id=%'
     loop
       begin
         perform validic_sync.grant_tenant(s.tenant, s.org);
       exception when others then
         raise warning 'validic.org_id of % not carried over: %', s.tenant, sqlerrm;
       end;
     end loop;
   end $$`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of [
    ...tenantStatements,
    enableFunction(MAPPING_POLICY),
    refreshFunction,
    'alter function validic_sync.refresh_row_level_security() owner to validic_owner',
    'revoke all on function validic_sync.refresh_row_level_security() from public',
    'select validic_sync.refresh_row_level_security()',
  ])
    await sql.raw(statement).execute(db);
}

/** Back to 0004's setting-based policy (the mappings are dropped with their table). */
export async function down(db: Kysely<any>): Promise<void> {
  for (const statement of [
    enableFunction(SETTING_POLICY),
    'select validic_sync.refresh_row_level_security()',
    'drop function validic_sync.refresh_row_level_security()',
    'drop function validic_sync.grant_tenant(regrole, text)',
    'drop function validic_sync.revoke_tenant(regrole, text)',
    'drop function validic_sync.tenant_org_ids(name)',
    'drop table validic_sync.tenant_roles',
  ])
    await sql.raw(statement).execute(db);
}

/**
 * Who may take advisory locks in the warehouse's database: only the loader and the owner (migration
 * 0033; docs/security.md, "What an analyst can and cannot do to the worker").
 *
 * The loader serializes its writes on transaction-level advisory locks whose keys anyone can compute
 * (`hashtextextended('validic-sync:load:<org>', 0)`, and the org ids are in every row), and PostgreSQL
 * lets every role call `pg_advisory_lock` by default: an analyst holding one would stall every load that
 * needs it. Migration 0033 revokes EXECUTE on the lock-taking functions from PUBLIC and grants it to
 * `validic_loader` and `validic_owner`. Only a superuser may change the rights on `pg_catalog`'s
 * functions, so a migration run by the owner's login cannot: `migrate` then says so, with the
 * statement an administrator runs once (`ADVISORY_LOCKS_FOR_LOADER_SQL`; deploy/postgres/init does it).
 */

import { sql } from 'kysely';
import type { Warehouse } from './open-warehouse.ts';

/** Names of the functions that take an advisory lock (`pg_advisory_unlock*` release only the caller's own). */
const LOCK_FUNCTION_NAMES = '^pg_(try_)?advisory_(xact_)?lock(_shared)?$';

/** What an administrator runs, once per warehouse database, as a superuser (the same as migration 0033). */
export const ADVISORY_LOCKS_FOR_LOADER_SQL = `do $$ declare f regprocedure; begin
  for f in select oid::regprocedure from pg_proc
            where pronamespace = 'pg_catalog'::regnamespace and proname ~ '${LOCK_FUNCTION_NAMES}' loop
    execute format('revoke execute on function %s from public', f);
    execute format('grant execute on function %s to validic_loader, validic_owner', f);
  end loop;
end $$;`;

/**
 * The advisory-lock functions PUBLIC may still execute in this database (empty once migration 0033 or
 * an administrator revoked them). PGlite, where migrations run as its superuser, is always covered.
 */
export async function advisoryLocksOpenToPublic(warehouse: Warehouse): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select p.oid::regprocedure::text as name from pg_proc p
     where p.pronamespace = 'pg_catalog'::regnamespace and p.proname ~ ${LOCK_FUNCTION_NAMES}
       and (p.proacl is null or exists (
             select 1 from aclexplode(p.proacl) a where a.grantee = 0 and a.privilege_type = 'EXECUTE'))
     order by 1`.execute(warehouse.db);
  return rows.map((r) => r.name);
}

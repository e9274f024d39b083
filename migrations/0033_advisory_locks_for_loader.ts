/**
 * 0033: only the loader and the owner may take advisory locks in this database (docs/security.md,
 * "What an analyst can and cannot do to the worker").
 *
 * The loader serializes its writes on transaction-level advisory locks whose keys anyone can compute
 * (hashes of the org id and the record ids, which every analyst can read), push's fetch claims and the
 * legacy delete checks on others, `migrate` on one more. PostgreSQL grants EXECUTE on
 * `pg_advisory_lock` and its siblings to PUBLIC, so any analyst or tenant login, from psql, a BI tool or
 * `validic-sync sql`, could hold a key a load needs for as long as its session lasted. This revokes
 * EXECUTE on every function that takes an advisory lock (`pg_[try_]advisory_[xact_]lock[_shared]`, both
 * signatures) from PUBLIC and grants it to `validic_loader` and `validic_owner`; the unlock functions
 * stay open (they only release the caller's own locks). Function rights are per database, so each
 * warehouse database gets its own, and a database cloned from a template keeps them.
 *
 * Only a superuser may change the rights on `pg_catalog`'s functions. Run by a superuser (PGlite, a
 * deploy that migrates as one) this applies them; run by the owner's login it changes nothing, and
 * `migrate` prints the statement for an administrator (deploy/postgres/init does it when it creates the
 * roles). A GRANT or REVOKE without the right only warns in PostgreSQL, hence the explicit check.
 *
 * Frozen in time: never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const forEachLockFunction = (body: string) => `do $$
declare f regprocedure;
begin
  if not exists (select 1 from pg_roles where rolname = current_user and rolsuper) then
    raise notice 'advisory lock functions left as they are: only a superuser may change their rights';
    return;
  end if;
  for f in select oid::regprocedure from pg_proc
            where pronamespace = 'pg_catalog'::regnamespace
              and proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$'
  loop
    ${body}
  end loop;
end $$`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      forEachLockFunction(`execute format('revoke execute on function %s from public', f);
    execute format('grant execute on function %s to validic_loader, validic_owner', f);`),
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql
    .raw(
      forEachLockFunction(`execute format('grant execute on function %s to public', f);
    execute format('revoke execute on function %s from validic_loader, validic_owner', f);`),
    )
    .execute(db);
}

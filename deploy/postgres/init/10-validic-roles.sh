#!/bin/sh
# Runs once, as the postgres image's superuser, when the data directory is first initialised
# (mounted into /docker-entrypoint-initdb.d by docker-compose.yml). The superuser is used for nothing
# else: afterwards `migrate` logs in as the owner and the worker as the loader (docs/security.md).
#
# - Creates the NOLOGIN roles of migrations 0001/0004 (validic_owner, validic_loader, validic_analyst)
#   when missing, so `migrate` needs neither SUPERUSER nor CREATEROLE.
# - Hands the database to validic_owner: it may create the schemas, and (PostgreSQL 15's public schema
#   belongs to the database owner) kysely's migration tables in `public`.
# - Creates two logins: the migrator (member of validic_owner, and acting as it, so everything it
#   creates belongs to validic_owner) and the app (validic_loader, plus validic_analyst so `status`
#   and `report` can read the views). Neither is SUPERUSER, CREATEROLE, CREATEDB or BYPASSRLS.
# - Lets only validic_loader and validic_owner take advisory locks in the database (what migration 0033
#   does when a superuser migrates): otherwise any analyst login could hold a lock the loader waits for.
#   Only a superuser may change the rights on pg_catalog's functions, so it is done here.
#
# Env: POSTGRES_USER, POSTGRES_DB (the image's), VALIDIC_OWNER_PASSWORD, VALIDIC_LOADER_PASSWORD;
# VALIDIC_MIGRATOR_USER (default validic_migrator), VALIDIC_APP_USER (default validic_app).
# test/security/postgres-init-roles.test.ts runs this file against a local PostgreSQL.
set -eu
: "${VALIDIC_OWNER_PASSWORD:?is required: the password of the migrator login}"
: "${VALIDIC_LOADER_PASSWORD:?is required: the password of the app login}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
  --set=db="${POSTGRES_DB:-postgres}" \
  --set=migrator="${VALIDIC_MIGRATOR_USER:-validic_migrator}" \
  --set=app="${VALIDIC_APP_USER:-validic_app}" \
  --set=migrator_password="$VALIDIC_OWNER_PASSWORD" \
  --set=app_password="$VALIDIC_LOADER_PASSWORD" <<'SQL'
-- Roles are cluster-wide: another database of the cluster may have created them already.
select format('create role %I nologin', r)
  from unnest(array['validic_owner', 'validic_loader', 'validic_analyst']) as r
 where not exists (select 1 from pg_roles where rolname = r) \gexec

alter database :"db" owner to validic_owner;

create role :"migrator" login password :'migrator_password' in role validic_owner;
alter role :"migrator" set role = 'validic_owner';

create role :"app" login password :'app_password' in role validic_loader, validic_analyst;

-- In this database (function rights are per database).
select format('revoke execute on function %s from public', p.oid::regprocedure),
       format('grant execute on function %s to validic_loader, validic_owner', p.oid::regprocedure)
  from pg_proc p
 where p.pronamespace = 'pg_catalog'::regnamespace
   and p.proname ~ '^pg_(try_)?advisory_(xact_)?lock(_shared)?$' \gexec
SQL

/**
 * A fresh, migrated PostgreSQL database per test file.
 *
 * The migrations run once into a template database (named after a hash of the migration files, so a
 * changed migration gets a new template); each test file then clones it with
 * `CREATE DATABASE x TEMPLATE tmpl`, which is much faster than migrating. Template creation and cloning
 * run under an advisory lock on the admin database, so parallel test files (vitest forks) do not race.
 *
 * Admin URL: TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import pg from 'pg';
import { FolderMigrationProvider, MIGRATIONS_FOLDER, migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse, type Warehouse } from '../../src/warehouse/open-warehouse.ts';

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const TEMPLATE_LOCK_KEY = 7_436_112_099;
const TEMPLATE_PREFIX = 'validic_sync_tmpl_';

export interface TestDatabase {
  /** Connection URL of the new database. */
  url: string;
  name: string;
  warehouse: Warehouse;
  /** Closes the warehouse and drops the database. */
  drop(): Promise<void>;
}

/** The database URL with a startup `role` setting: every connection runs as that role (SET ROLE). */
export function asRole(url: string, role: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c role=${role}`);
  return u.href;
}

/** The database URL for another login (trust auth on the test cluster: the password is not checked). */
export function asLogin(url: string, login: string): string {
  const u = new URL(url);
  u.username = login;
  u.password = 'not-checked-by-trust-auth';
  return u.href;
}

function urlFor(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.href;
}

/** One connection for the callback's time, closed after it. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const withAdmin = <T>(fn: (client: pg.Client) => Promise<T>) => withClient(ADMIN_URL, fn);

async function migrationsHash(): Promise<string> {
  const hash = createHash('sha256');
  for (const file of (await readdir(MIGRATIONS_FOLDER)).sort()) {
    hash.update(file);
    hash.update(await readFile(new URL(file, MIGRATIONS_FOLDER)));
  }
  return hash.digest('hex').slice(0, 12);
}

function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
}

async function ensureTemplate(admin: pg.Client): Promise<string> {
  const template = `${TEMPLATE_PREFIX}${await migrationsHash()}`;
  const exists = await admin.query('select 1 from pg_database where datname = $1', [template]);
  if (exists.rowCount) return template;
  // Templates of older migration versions are of no use any more.
  const stale = await admin.query<{ datname: string }>(
    `select datname from pg_database where datname like '${TEMPLATE_PREFIX}%' and datname <> $1`,
    [template],
  );
  for (const { datname } of stale.rows)
    await admin.query(`drop database if exists "${datname}"`).catch(() => {});
  const building = `${template}_build`;
  await admin.query(`drop database if exists "${building}"`);
  await admin.query(`create database "${building}"`);
  const warehouse = await openWarehouse({ databaseUrl: urlFor(building), maxConnections: 2 });
  try {
    await migrateToLatest(warehouse.db);
  } finally {
    await warehouse.close();
  }
  await admin.query(`alter database "${building}" rename to "${template}"`);
  return template;
}

/** A new database cloned from the migrated template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = uniqueName('validic_sync_test');
  await withAdmin(async (admin) => {
    await admin.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    try {
      const template = await ensureTemplate(admin);
      await admin.query(`create database "${name}" template "${template}"`);
    } finally {
      await admin.query('select pg_advisory_unlock($1)', [TEMPLATE_LOCK_KEY]);
    }
  });
  return open(name);
}

/** A new database with no schema at all (for migration tests). */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const name = uniqueName('validic_sync_empty');
  await withAdmin((admin) => admin.query(`create database "${name}"`));
  return open(name);
}

async function open(name: string): Promise<TestDatabase> {
  const url = urlFor(name);
  const warehouse = await openWarehouse({ databaseUrl: url, maxConnections: 4 });
  return {
    url,
    name,
    warehouse,
    async drop() {
      await warehouse.close();
      await withAdmin((admin) => admin.query(`drop database if exists "${name}" with (force)`));
    },
  };
}

/** The migrations numbered before `prefix` only (e.g. '0010'): the warehouse as it was before that one. */
export function migrationsBefore(prefix: string) {
  return {
    async getMigrations() {
      const all = await new FolderMigrationProvider().getMigrations();
      return Object.fromEntries(Object.entries(all).filter(([name]) => name < prefix));
    },
  };
}

/**
 * `validic-sync sql` cannot change the warehouse (issue 17, item 2), on PostgreSQL with an analyst
 * login and on the embedded PGlite: several statements, COMMIT, SET TRANSACTION READ WRITE, SET ROLE,
 * COPY … TO PROGRAM, a writable CTE, a SECURITY DEFINER function that inserts (so only the read-only
 * transaction stands in its way), and a query that would run for ten minutes are each refused (exit 2
 * before the database, exit 1 by the database) or cancelled by the statement timeout (exit 1), and the
 * database is the same afterwards. A superuser or BYPASSRLS login is refused (exit 2). Data with
 * control characters is printed escaped.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeControlChars, terminalSafeJson } from '../../src/report/format-table.ts';
import { migrateToLatest } from '../../src/warehouse/migrate.ts';
import { openWarehouse } from '../../src/warehouse/open-warehouse.ts';
import { firstKeyword } from '../../src/warehouse/read-only-query.ts';
import { runCli } from '../helpers/cli.ts';
import { ADMIN_URL, createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const EVIL_UID = 'evil\u001b]0;pwned\u0007\u009b31m\u202etxt';
const touched = join(tmpdir(), `validic-sql-copy-${randomBytes(4).toString('hex')}`);

/** As the owner: a user whose uid carries terminal controls, and a function that writes as its owner. */
async function seed(db: Kysely<any>): Promise<void> {
  await sql`insert into validic.users (org_id, uid, raw) values ('org-sql', ${EVIL_UID}, '{}')`.execute(db);
  await sql`
    create function validic.sneaky_insert() returns int language sql volatile security definer as
    $$ insert into validic.users (org_id, uid, raw) values ('org-sql', 'pwned', '{}') returning 1 $$`.execute(
    db,
  );
  await sql`grant execute on function validic.sneaky_insert() to public`.execute(db);
}

/** Everything a refused statement might have changed: relations, functions, users. */
async function fingerprint(db: Kysely<any>): Promise<unknown> {
  const { rows } = await sql`
    select
      (select string_agg(n.nspname || '.' || c.relname, ',' order by n.nspname, c.relname)
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast')
          and n.nspname not like 'pg_temp%' and n.nspname not like 'pg_toast_temp%') as relations,
      (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname in ('validic', 'validic_sync', 'public')) as functions,
      (select string_agg(uid, ',' order by uid) from validic.users) as users`.execute(db);
  return rows[0];
}

interface Case {
  name: string;
  query: string;
  code: number;
  stderr: RegExp;
  args?: string[];
}

const READ_ONLY = /read-only transaction/;

/**
 * The attempts both backends must refuse; the long query differs (PGlite's pg_sleep does not sleep). A
 * statement the guards refuse exits 2 (README: "Exit 2 for a refused statement"), whether the keyword
 * check or the database refused it; a query that ran too long exits 1.
 */
function attempts(longQuery: string): Case[] {
  return [
    {
      name: 'several statements',
      query: 'select 1; create table validic.pwned (x int)',
      code: 2,
      stderr: /multiple commands/,
    },
    {
      name: 'commit, then DDL (as the first statement)',
      query: 'commit; create table validic.pwned (x int)',
      code: 2,
      stderr: /queries only, not COMMIT/,
    },
    {
      name: 'commit, then DDL (after a select)',
      query: 'select 1; commit; create table validic.pwned (x int)',
      code: 2,
      stderr: /multiple commands/,
    },
    {
      name: 'set transaction read write',
      query: 'set transaction read write',
      code: 2,
      stderr: /queries only, not SET/,
    },
    {
      name: 'read write through set_config',
      query: "select set_config('transaction_read_only', 'off', true)",
      code: 2,
      stderr: /read-write mode must be set before any query/,
    },
    { name: 'set role', query: 'set role postgres', code: 2, stderr: /queries only, not SET/ },
    {
      name: 'set role through set_config, then a write',
      query: "select set_config('role', 'postgres', true), validic.sneaky_insert()",
      code: 2,
      stderr: /permission denied to set role|read-only transaction/,
    },
    {
      name: 'copy to program',
      query: `copy (select 1) to program 'touch ${touched}'`,
      code: 2,
      stderr: /queries only, not COPY/,
    },
    {
      name: 'a writable CTE',
      query:
        "with x as (insert into validic.users (org_id, uid, raw) values ('org-sql', 'pwned', '{}') returning 1) select * from x",
      code: 2,
      stderr: READ_ONLY,
    },
    {
      name: 'a volatile SECURITY DEFINER function that inserts',
      query: 'select validic.sneaky_insert()',
      code: 2,
      stderr: READ_ONLY,
    },
    {
      name: 'a ten-minute query, cancelled by the statement timeout',
      query: longQuery,
      args: ['--timeout', '1'],
      code: 1,
      stderr: /query cancelled: it ran longer than the 1 s timeout/,
    },
  ];
}

function checkEscapedOutput(table: string, json: string): void {
  expect(table).toContain('evil\\x1b]0;pwned\\x07\\x9b31m\\u202etxt');
  expect(table).not.toMatch(/[\u001b\u0007\u009b\u202e]/);
  expect(json).not.toMatch(/[\u001b\u0007\u009b\u202e]/);
  // Still valid JSON, with the same value.
  expect(JSON.parse(json.trim())).toEqual({ uid: EVIL_UID });
}

describe('sql on PostgreSQL, as a login granted validic_analyst', () => {
  let db: TestDatabase;
  const analyst = `vs_sql_analyst_${randomBytes(4).toString('hex')}`;
  const bypass = `vs_sql_bypass_${randomBytes(4).toString('hex')}`;
  const superRole = `vs_sql_super_${randomBytes(4).toString('hex')}`;
  const member = `vs_sql_member_${randomBytes(4).toString('hex')}`;
  let before: unknown;

  const urlAs = (user: string, options?: string) => {
    const url = new URL(db.url);
    url.username = user;
    if (options) url.searchParams.set('options', options);
    return url.href;
  };
  const cli = (url: string, args: string[]) =>
    runCli(['sql', ...args], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      DATABASE_URL: url,
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`create role ${analyst} login in role validic_analyst`);
    await admin.query(`create role ${bypass} login bypassrls in role validic_analyst`);
    await admin.query(`create role ${superRole} nologin superuser`);
    await admin.query(`create role ${member} login in role validic_analyst, ${superRole}`);
    await admin.end();
    await seed(db.warehouse.db);
    before = await fingerprint(db.warehouse.db);
  });
  afterAll(async () => {
    await db?.drop();
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`drop role if exists ${analyst}`);
    for (const role of [bypass, member, superRole]) await admin.query(`drop role if exists ${role}`);
    await admin.end();
    rmSync(touched, { force: true });
  });

  it('reads as the analyst login, control characters escaped in the table and in valid JSON', async () => {
    const freshness = await cli(urlAs(analyst), ['select * from validic.data_freshness']);
    expect(freshness.code, freshness.stderr).toBe(0);
    const query = `select uid from validic.users where uid like 'evil%'`;
    const table = await cli(urlAs(analyst), [query]);
    const json = await cli(urlAs(analyst), ['--json', query]);
    expect(table.code, table.stderr).toBe(0);
    expect(json.code, json.stderr).toBe(0);
    checkEscapedOutput(table.stdout, json.stdout);
  });

  for (const attempt of attempts('select pg_sleep(600)')) {
    it(`refuses ${attempt.name}`, async () => {
      const result = await cli(urlAs(analyst), [...(attempt.args ?? []), attempt.query]);
      expect(result.stderr).toMatch(attempt.stderr);
      expect(result.code).toBe(attempt.code);
      expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
      expect(await fingerprint(db.warehouse.db)).toEqual(before);
      expect(existsSync(touched)).toBe(false);
    });
  }

  it('refuses a superuser login, also behind a role option, a BYPASSRLS login and a member of a superuser role', async () => {
    for (const [url, who] of [
      [db.url, /postgres \(superuser\)/],
      [urlAs('postgres', '-c role=validic_analyst'), /postgres \(superuser\)/],
      [urlAs(bypass), new RegExp(`${bypass} \\(BYPASSRLS\\)`)],
      [urlAs(member), new RegExp(`${superRole} \\(superuser\\)`)],
    ] as const) {
      const result = await cli(url, ['select 1']);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(who);
      expect(result.stderr).toMatch(
        /DATABASE_URL: the sql command refuses to run as, or as a member of, .*Fix: connect with a login granted validic_analyst/s,
      );
      expect(result.stdout).toBe('');
    }
    expect(await fingerprint(db.warehouse.db)).toEqual(before);
  });
});

describe('sql on the embedded PGlite', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'validic-sql-pglite-'));
  let before: unknown;

  const cli = (args: string[]) =>
    runCli(['sql', ...args], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      VALIDIC_DATA_DIR: dataDir,
    });
  async function withPGlite<T>(fn: (db: Kysely<any>) => Promise<T>): Promise<T> {
    const warehouse = await openWarehouse({ dataDir });
    try {
      return await fn(warehouse.db);
    } finally {
      await warehouse.close();
    }
  }

  beforeAll(async () => {
    before = await withPGlite(async (db) => {
      await migrateToLatest(db);
      await seed(db);
      return fingerprint(db);
    });
  });
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(touched, { force: true });
  });

  it('reads as validic_analyst, control characters escaped in the table and in valid JSON', async () => {
    const who = await cli(['--json', 'select current_user as who']);
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toEqual({ who: 'validic_analyst' });
    const freshness = await cli(['select * from validic.data_freshness']);
    expect(freshness.code, freshness.stderr).toBe(0);
    const query = `select uid from validic.users where uid like 'evil%'`;
    const table = await cli([query]);
    const json = await cli(['--json', query]);
    expect(table.code, table.stderr).toBe(0);
    expect(json.code, json.stderr).toBe(0);
    checkEscapedOutput(table.stdout, json.stdout);
  });

  // PGlite ignores statement_timeout and pg_sleep returns at once: an endless recursive query instead,
  // stopped by terminating the worker thread it runs on.
  const endless = 'with recursive r(n) as (select 1 union all select n + 1 from r) select count(*) from r';
  for (const attempt of attempts(endless)) {
    it(`refuses ${attempt.name}`, async () => {
      const result = await cli([...(attempt.args ?? []), attempt.query]);
      expect(result.stderr).toMatch(attempt.stderr);
      expect(result.code).toBe(attempt.code);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(await withPGlite(fingerprint)).toEqual(before);
      expect(existsSync(touched)).toBe(false);
    });
  }
});

describe('the pure checks', () => {
  it('finds the first keyword past spaces, comments and parentheses', () => {
    expect(firstKeyword('  select 1')).toBe('select');
    expect(firstKeyword('-- note\n/* a /* nested */ c */ ((WITH x as (select 1) table x))')).toBe('with');
    expect(firstKeyword('/* select */ commit; select 1')).toBe('commit');
    expect(firstKeyword('/* unterminated select')).toBe('');
    expect(firstKeyword('')).toBe('');
  });

  it('escapes controls for the terminal and keeps JSON equal', () => {
    expect(escapeControlChars('a\nb\tc\u001b[2J\u0000\u007f\u0085\u2028\u2066')).toBe(
      'a\\nb\\tc\\x1b[2J\\x00\\x7f\\x85\\u2028\\u2066',
    );
    const value = { s: 'x\u001b\u009b\u2029y', n: 1 };
    const line = terminalSafeJson(value);
    expect(line).not.toMatch(/[\u001b\u009b\u2029]/);
    expect(JSON.parse(line)).toEqual(value);
  });
});

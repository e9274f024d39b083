/**
 * `validic-sync legacy` at scale: `latest` pages of 10 records (the sandbox's limit cap), far fewer than a
 * 24-hour window holds, over a month of a few dozen records a day, against the three ways a legacy server
 * may page that the sandbox plays (src/sandbox/faults.ts):
 * - `page` alone (`offset` ignored; its `next` links carry `page`, as the provider's own links suggest);
 * - `page` and `offset` together (links carry both);
 * - a listing cut short: `summary.results` counts more records than the pages hold.
 * Every record must land (compared with the sandbox's truth), and where a listing came up short the
 * command says so (exit 1), keeps what it read, and leaves the object's cursor before what it did not
 * read; a later run against a server that behaves completes it.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Faults } from '../../src/sandbox/faults.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import {
  compareLegacyWithTruth,
  NO_LEGACY_DIFFERENCES as NONE,
} from '../helpers/compare-legacy-with-truth.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const ALL_OBJECTS = 'fitness,routine,nutrition,sleep,weight,diabetes,biometrics,tobacco_cessation';
const DAYS = 30;
const PAGE = 10;
const DAY_MS = 86_400_000;

describe('legacy latest paging against servers that page differently', () => {
  let sandbox: Sandbox;
  const databases: TestDatabase[] = [];

  beforeAll(async () => {
    // 16 users: about 16 routine records a day, so most 24-hour routine windows take two or three pages.
    sandbox = await startSandbox({ seed: 7, users: 16, days: DAYS });
  });
  afterAll(async () => {
    await sandbox?.close();
    for (const db of databases) await db.drop();
  });

  async function freshDatabase() {
    const db = await createTestDatabase();
    databases.push(db);
    return db;
  }

  // Generated last_updated values lie up to a day after their day: end the range in the future.
  const to = () => new Date(Date.now() + 2 * DAY_MS).toISOString();
  const legacy = (db: TestDatabase) =>
    runCli(
      ['legacy', '--from', `${DAYS + 2}d`, '--to', to(), '--objects', ALL_OBJECTS],
      sandboxEnv(sandbox, {
        DATABASE_URL: db.url,
      }),
    );

  /** Windows that hold more than one page: the test means nothing unless paging happens. */
  function multiPageWindows(): number {
    const perDay = new Map<string, number>();
    for (const r of sandbox.truth.legacyRecords()) {
      const key = `${r.object} ${r.last_updated.slice(0, 10)}`;
      perDay.set(key, (perDay.get(key) ?? 0) + 1);
    }
    return [...perDay.values()].filter((n) => n > PAGE).length;
  }

  async function cursors(db: TestDatabase): Promise<Map<string, string>> {
    const rows = await sql<{ key: string; value: { end: string } }>`
      select key, value from validic_sync.checkpoints where key like 'legacy:latest:%'`.execute(
      db.warehouse.db,
    );
    return new Map(rows.rows.map((r) => [r.key.slice('legacy:latest:'.length), r.value.end]));
  }

  it.each<[string, Partial<Faults>]>([
    ['page alone (offset ignored)', { legacyPaging: 'page' }],
    ['page and offset together', { legacyPaging: 'page-and-offset' }],
  ])('reads every record from a server paging by %s', async (_, paging) => {
    expect(multiPageWindows()).toBeGreaterThan(20);
    sandbox.control.setFaults({ latestLimitCap: PAGE, ...paging }, { reset: true });
    const db = await freshDatabase();
    const run = await legacy(db);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toMatch(/: done in/);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);
    // Paging happened: more requests than windows, all of them answered.
    const [, windows, requests] = /windows \d+\/(\d+) \| requests (\d+)/.exec(run.stdout)!.map(Number);
    expect(requests!).toBeGreaterThan(windows! + 20);
    // Every object's cursor reached the end of the range (as far as it was fetched).
    const ends = await cursors(db);
    expect([...ends.keys()].sort()).toEqual(ALL_OBJECTS.split(',').sort());
    for (const end of ends.values()) expect(Date.parse(end)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('says a listing cut short is incomplete, keeps the cursor before it, and a later run completes it', async () => {
    const cut = 12;
    sandbox.control.setFaults(
      {
        latestLimitCap: PAGE,
        legacyListingCutShort: { after: cut, style: 'next-null', objects: ['routine'] },
      },
      { reset: true },
    );
    const db = await freshDatabase();
    const first = await legacy(db);
    expect(first.code).toBe(1);
    expect(first.stdout).toMatch(/: incomplete in/);
    expect(first.stdout).toMatch(/incomplete listings: 1 window/);
    expect(first.stdout).toMatch(
      new RegExp(
        `failed: legacy\\.latest .*incomplete listing from the legacy latest routine .*: read ${cut} of \\d+`,
      ),
    );
    expect(first.stdout).toMatch(/run the same command again/);

    // Nothing lost that was read: every other object is whole; of routine, what is missing lies at or
    // after the start of the window that came up short, never before the routine cursor.
    const differences = await compareLegacyWithTruth(db.warehouse, sandbox);
    expect(differences.unexpected).toEqual([]);
    expect(differences.wrongLastUpdated).toEqual([]);
    expect(differences.wrongBody).toEqual([]);
    expect(differences.missing.length).toBeGreaterThan(0);
    expect(differences.missing.every((key) => key.startsWith('routine/'))).toBe(true);
    const ends = await cursors(db);
    const routineEnd = ends.has('routine') ? Date.parse(ends.get('routine')!) : Number.NEGATIVE_INFINITY;
    const missing = new Set(differences.missing.map((key) => key.slice('routine/'.length)));
    const missingRoutine = sandbox.truth.legacyRecords('routine').filter((r) => missing.has(r._id));
    for (const r of missingRoutine) expect(Date.parse(r.last_updated)).toBeGreaterThan(routineEnd);
    // The cursor stopped before the end: the windows after the incomplete one were not read.
    expect(routineEnd).toBeLessThan(Date.now() - DAY_MS);
    for (const object of ALL_OBJECTS.split(',').filter((o) => o !== 'routine')) {
      expect(Date.parse(ends.get(object)!)).toBeGreaterThan(Date.now() - 60_000);
    }
    // The records the short listing did show were loaded (its first `cut`), though the window failed.
    const [, start, end] = /latest routine (\S+)\.\.(\S+Z):/.exec(first.stdout)!;
    const shown = sandbox.truth
      .legacyRecords('routine')
      .filter((r) => r.last_updated >= start! && r.last_updated <= end!)
      .sort((a, b) =>
        a.last_updated < b.last_updated ? -1 : a.last_updated > b.last_updated ? 1 : a._id < b._id ? -1 : 1,
      )
      .slice(0, cut);
    expect(shown).toHaveLength(cut);
    for (const r of shown) expect(missing.has(r._id)).toBe(false);

    // The server behaves again: the same command completes the object and moves its cursor.
    sandbox.control.setFaults({ latestLimitCap: PAGE }, { reset: true });
    const second = await legacy(db);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(await compareLegacyWithTruth(db.warehouse, sandbox)).toEqual(NONE);
    expect(Date.parse((await cursors(db)).get('routine')!)).toBeGreaterThan(Date.now() - 60_000);
    // The window that came up short is retried with back-off (2 + 4 + 8 + 16 s) before it fails.
  }, 240_000);
});

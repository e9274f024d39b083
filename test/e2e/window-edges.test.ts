/**
 * Window edges under time zones (issue 15, item 6): the platform's date filter may match a record's
 * UTC date or the user's local date. Against a sandbox that windows by LOCAL date, a backfill of
 * users at UTC−12 and UTC+14 lands every record whose UTC start date lies in the range: none of the
 * first or last day is lost. (The same range function serves the recent poll.)
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

describe('backfill edges against a sandbox that windows by local date', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  const from = day(12);
  const to = day(4);
  /** Records at the range's edges whose local date falls outside it, plus one inside for each user. */
  const edges: { uid: string; start: string; offset: number }[] = [
    { uid: 'west', start: `${from}T05:00:00Z`, offset: -43_200 }, // local: the day before `from`
    { uid: 'west', start: `${from}T13:00:00Z`, offset: -43_200 },
    { uid: 'west', start: `${to}T11:59:00Z`, offset: -43_200 }, // local: the day before `to`
    { uid: 'east', start: `${from}T00:30:00Z`, offset: 50_400 },
    { uid: 'east', start: `${to}T09:00:00Z`, offset: 50_400 },
    { uid: 'east', start: `${to}T20:00:00Z`, offset: 50_400 }, // local: the day after `to`
  ];
  let edgeIds: string[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11, users: 1, days: 20, windowBy: 'local' });
    sandbox.control.addUser({ uid: 'west', timezone: 'Etc/GMT+12' });
    sandbox.control.addUser({ uid: 'east', timezone: 'Pacific/Kiritimati' });
    for (let ago = 1; ago <= 15; ago++) {
      for (const uid of ['west', 'east'])
        sandbox.control.addRecord({ uid, type: 'measurement', day: day(ago) });
    }
    edgeIds = edges.map(
      ({ uid, start, offset }) =>
        sandbox.control.addRecord({
          uid,
          type: 'measurement',
          fields: { start_time: start, end_time: start, utc_offset: offset },
        }).id,
    );
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
  });

  it('lands every record whose UTC start date is in the range, first and last day included', async () => {
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    const run = await runCli(
      [
        'backfill',
        '--from',
        from,
        '--to',
        to,
        '--resources',
        'measurements',
        '--users',
        'west,east',
        '--no-connections',
      ],
      env,
    );
    expect(run.code, run.stderr).toBe(0);

    const inRange = sandbox.truth
      .records({ type: 'measurement' })
      .filter((r) => ['west', 'east'].includes(r.user.uid))
      .filter((r) => r.start_time.slice(0, 10) >= from && r.start_time.slice(0, 10) <= to);
    // The edge records are in the range by UTC date, yet their local date is outside it for some.
    const localDate = (r: (typeof inRange)[number]) =>
      new Date(Date.parse(r.start_time) + r.utc_offset * 1000).toISOString().slice(0, 10);
    expect(inRange.filter((r) => localDate(r) < from || localDate(r) > to).length).toBeGreaterThanOrEqual(2);
    expect(inRange.map((r) => r.id)).toEqual(expect.arrayContaining(edgeIds));

    const stored = await sql<{ id: string }>`
      select id from validic.records where type = 'measurement' and start_time >= ${`${from}T00:00:00Z`}::timestamptz
        and start_time < (${to}::date + 1)::timestamptz`.execute(db.warehouse.db);
    expect(new Set(stored.rows.map((r) => r.id))).toEqual(new Set(inRange.map((r) => r.id)));
  });
});

/**
 * The sandbox tells the truth about time (issue 15, item 7): no record it serves lies in the future of
 * its clock, and a live record's created_at is the clock's time when the sandbox released it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { V2Record } from '../../src/sandbox/types.ts';
import { useBeforeAll } from '../helpers/use-before-all.ts';
import { ANCHOR, getJson, startTestSandbox } from './fixtures.ts';

/** Every time a record claims: start, end, range tags and series points. */
function timesOf(record: V2Record): number[] {
  const times = [record.start_time, record.end_time];
  for (const tag of record.tags) if (tag.name.startsWith('range_')) times.push(tag.value);
  for (const m of record.metrics) if ('data_points' in m) for (const p of m.data_points) times.push(p.time);
  return times.map((t) => Date.parse(t));
}

function expectNotInFuture(records: V2Record[], nowMs: number) {
  const future = records.filter((r) => timesOf(r).some((t) => t > nowMs) || Date.parse(r.created_at) > nowMs);
  expect(future.map((r) => `${r.type} ${r.start_time}..${r.end_time} created ${r.created_at}`)).toEqual([]);
}

describe('generated data', () => {
  const sb = useBeforeAll(startTestSandbox, (sandbox) => sandbox.close());

  it('holds no record, point or created_at in the future of the clock, and today is served as far as it went', async () => {
    const nowMs = Date.parse(sb.control.now());
    const records = sb.truth.records();
    expectNotInFuture(records, nowMs);
    // A record is created after it happened.
    for (const r of records) expect(Date.parse(r.created_at)).toBeGreaterThanOrEqual(Date.parse(r.end_time));
    // Series of the current day are kept up to now (not dropped): the day in progress is there.
    const today = ANCHOR.toISOString().slice(0, 10);
    const partial = records.filter(
      (r) => (r.type === 'intraday' || r.type === 'cgm') && r.end_time.startsWith(today),
    );
    expect(partial.length).toBeGreaterThan(0);
    // And the API serves the same: a measurement list of today holds nothing later than now.
    const user = sb.truth.users()[0]!;
    const url = `${sb.apiUrl}/organizations/${sb.orgId}/users/${user.uid}/intraday?token=${sb.token}&start_date=${today}&end_date=${today}`;
    expectNotInFuture((await getJson(url)).body.data ?? [], Date.parse(sb.control.now()));
  });
});

describe('live records', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    // Half past midnight UTC: the local day of a user in London has barely begun, in Sydney it is 10:30.
    sb = await startTestSandbox({ now: new Date('2026-03-15T00:30:00Z') });
    for (const timezone of ['Europe/London', 'Australia/Sydney', 'America/Los_Angeles']) {
      sb.control.addUser({ uid: `tz-${timezone}`, timezone });
    }
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('are released with created_at = the clock, and never measured after it', () => {
    for (const timezone of ['Europe/London', 'Australia/Sydney', 'America/Los_Angeles']) {
      for (const type of [
        'measurement',
        'intraday',
        'cgm',
        'workout',
        'sleep',
        'summary',
        'nutrition',
      ] as const) {
        for (let i = 0; i < 5; i++) {
          const before = Date.parse(sb.control.now());
          const record = sb.control.addRecord({ uid: `tz-${timezone}`, type });
          const after = Date.parse(sb.control.now());
          const created = Date.parse(record.created_at);
          expect(created).toBeGreaterThanOrEqual(before);
          expect(created).toBeLessThanOrEqual(after);
          expectNotInFuture([record], created);
        }
      }
    }
  });

  it('changes and deletions are released with created_at = the clock too', () => {
    const record = sb.control.addRecord({ uid: 'tz-Europe/London', type: 'measurement' });
    sb.control.advanceClock(60_000);
    const before = Date.parse(sb.control.now());
    const changed = sb.control.updateRecord(record.id);
    const deleted = sb.control.deleteRecord(record.id);
    const after = Date.parse(sb.control.now());
    for (const version of [changed, deleted]) {
      expect(Date.parse(version.created_at)).toBeGreaterThanOrEqual(before);
      expect(Date.parse(version.created_at)).toBeLessThanOrEqual(after);
    }
    expect(Date.parse(deleted.deleted_at!)).toBeLessThanOrEqual(after);
  });

  it('refuses a record of a day that cannot have happened yet', () => {
    expect(() =>
      sb.control.addRecord({ uid: 'tz-Europe/London', type: 'measurement', day: '2026-03-16' }),
    ).toThrow(/can have happened by the sandbox clock/);
  });
});

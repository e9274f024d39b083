import { describe, expect, it } from 'vitest';
import { PermanentError, UnexpectedResponseError, UsageError } from '../../src/errors/index.ts';
import { recordTypeOf, toV2Resource, V2_RESOURCES } from '../../src/validic/platform-limits.ts';
import { createV2Client } from '../../src/validic/v2-client.ts';
import { rawRecord } from '../helpers/fixtures/index.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const mock = useMockAgent(ORIGIN);
const serve = (answer: (url: URL) => { status?: number; body: unknown }) =>
  mock.serve(({ url }) => answer(url));
const v2 = () => createV2Client({ http: mock.http(), apiUrl: ORIGIN, orgId: 'org1', token: 'tok' });

/** The v2 resource paths, in the order the platform documents them. */
const PATHS = ['measurements', 'nutrition', 'intraday', 'summaries', 'workouts', 'sleep', 'cgm'];

describe('v2 resources', () => {
  it('maps config names and record types to paths', () => {
    expect(V2_RESOURCES).toEqual(PATHS);
    expect(toV2Resource('measurement')).toBe('measurements');
    expect(toV2Resource('Summary')).toBe('summaries');
    expect(toV2Resource('workout')).toBe('workouts');
    expect(recordTypeOf('summaries')).toBe('summary');
    expect(() => toV2Resource('steps')).toThrow(UsageError);
  });
});

describe('fetchRecords', () => {
  it('requests /users/{uid}/{resource} with the window and returns raw records', async () => {
    const record = rawRecord('measurement', { id: 'r1', metrics: [{ type: 'pulse', value: 60 }] });
    serve(() => ({ body: { data: [record] } }));
    // Singular and plural names both map to the plural path.
    const names = ['measurement', 'nutrition', 'intraday', 'summaries', 'workouts', 'sleep', 'cgm'];
    for (const resource of names) {
      const records = await v2().fetchRecords({
        uid: 'user/1',
        resource,
        startDate: '2026-01-01',
        endDate: '2026-01-30',
      });
      expect(records).toEqual([record]);
    }
    expect(mock.requested.map((u) => u.pathname.split('/').pop())).toEqual(PATHS);
    expect(mock.requested[0]!.pathname).toBe('/organizations/org1/users/user%2F1/measurements');
    expect(mock.requested[0]!.searchParams.get('start_date')).toBe('2026-01-01');
    expect(mock.requested[0]!.searchParams.get('end_date')).toBe('2026-01-30');
    expect(mock.requested[0]!.searchParams.get('token')).toBe('tok');
  });

  it('treats {} and a bare array as record lists', async () => {
    serve((url) => ({ body: url.pathname.endsWith('sleep') ? {} : [{ id: 'x' }] }));
    await expect(
      v2().fetchRecords({ uid: 'u', resource: 'sleep', startDate: '2026-01-01', endDate: '2026-01-01' }),
    ).resolves.toEqual([]);
    await expect(
      v2().fetchRecords({ uid: 'u', resource: 'cgm', startDate: '2026-01-01', endDate: '2026-01-01' }),
    ).resolves.toEqual([{ id: 'x' }]);
  });

  it('keeps elements that are not objects for quarantine instead of failing the page', async () => {
    const good = rawRecord('measurement', { id: 'r1' });
    serve(() => ({ body: { data: [good, 7, null, 'text'] } }));
    const records = await v2().fetchRecords({
      uid: 'u',
      resource: 'measurements',
      startDate: '2026-01-01',
      endDate: '2026-01-02',
    });
    expect(records).toEqual([good, 7, null, 'text']);
  });

  it('refuses windows over 30 days before asking the platform', async () => {
    serve(() => ({ body: {} }));
    await expect(
      v2().fetchRecords({ uid: 'u', resource: 'nutrition', startDate: '2026-01-01', endDate: '2026-01-31' }),
    ).rejects.toThrow(UsageError);
    expect(mock.requested).toHaveLength(0);
  });

  it('fails on an envelope the platform never sends', async () => {
    serve(() => ({ body: { data: 'nope' } }));
    const err = await v2()
      .fetchRecords({ uid: 'u', resource: 'intraday', startDate: '2026-01-01', endDate: '2026-01-02' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect(err).toBeInstanceOf(PermanentError);
  });
});

describe('getUser', () => {
  it('returns the bare user object', async () => {
    serve(() => ({ body: { id: 's1', uid: 'u 1', location: { timezone: 'UTC' } } }));
    await expect(v2().getUser('u 1')).resolves.toEqual({
      id: 's1',
      uid: 'u 1',
      location: { timezone: 'UTC' },
    });
    expect(mock.requested[0]!.pathname).toBe('/organizations/org1/users/u%201');
  });
});

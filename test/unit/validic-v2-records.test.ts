import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PermanentError, UnexpectedResponseError, UsageError } from '../../src/errors/index.ts';
import { createHttpClient } from '../../src/http/http-client.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { createV2Client } from '../../src/validic/v2-client.ts';
import { recordTypeOf, toV2Resource, V2_RESOURCES } from '../../src/validic/v2-resources.ts';

const ORIGIN = 'https://api.example.test';
let agent: MockAgent;
let requested: URL[];

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  requested = [];
});
afterEach(async () => {
  await agent.close();
});

function serve(answer: (url: URL) => { status?: number; body: unknown }) {
  agent
    .get(ORIGIN)
    .intercept({ path: () => true, method: 'GET' })
    .reply((req) => {
      const url = new URL(req.path, ORIGIN);
      requested.push(url);
      const { status = 200, body } = answer(url);
      return { statusCode: status, data: typeof body === 'string' ? body : JSON.stringify(body) };
    })
    .persist();
}

const v2 = () =>
  createV2Client({
    http: createHttpClient({ dispatcher: agent, clock: createManualClock() }),
    apiUrl: ORIGIN,
    orgId: 'org1',
    token: 'tok',
  });

describe('v2 resources', () => {
  it('maps config names and record types to paths', () => {
    expect(V2_RESOURCES).toEqual([
      'measurements',
      'nutrition',
      'intraday',
      'summaries',
      'workouts',
      'sleep',
      'cgm',
    ]);
    expect(toV2Resource('measurement')).toBe('measurements');
    expect(toV2Resource('Summary')).toBe('summaries');
    expect(toV2Resource('workout')).toBe('workouts');
    expect(recordTypeOf('summaries')).toBe('summary');
    expect(() => toV2Resource('steps')).toThrow(UsageError);
  });
});

describe('fetchRecords', () => {
  it('requests /users/{uid}/{resource} with the window and returns raw records', async () => {
    const record = { id: 'r1', checksum: 'c', type: 'measurement', metrics: [{ type: 'pulse', value: 60 }] };
    serve(() => ({ body: { data: [record] } }));
    for (const resource of [
      'measurement',
      'nutrition',
      'intraday',
      'summaries',
      'workouts',
      'sleep',
      'cgm',
    ]) {
      const records = await v2().fetchRecords({
        uid: 'user/1',
        resource,
        startDate: '2026-01-01',
        endDate: '2026-01-30',
      });
      expect(records).toEqual([record]);
    }
    expect(requested.map((u) => u.pathname.split('/').pop())).toEqual([
      'measurements',
      'nutrition',
      'intraday',
      'summaries',
      'workouts',
      'sleep',
      'cgm',
    ]);
    expect(requested[0]!.pathname).toBe('/organizations/org1/users/user%2F1/measurements');
    expect(requested[0]!.searchParams.get('start_date')).toBe('2026-01-01');
    expect(requested[0]!.searchParams.get('end_date')).toBe('2026-01-30');
    expect(requested[0]!.searchParams.get('token')).toBe('tok');
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
    const good = { id: 'r1', checksum: 'c', type: 'measurement' };
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
    expect(requested).toHaveLength(0);
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
    expect(requested[0]!.pathname).toBe('/organizations/org1/users/u%201');
  });
});

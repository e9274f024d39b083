import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { getJson, sendJson, startTestSandbox } from './fixtures.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startTestSandbox();
});
afterAll(() => sb.close());

const users = (q = '') => `${sb.apiUrl}/organizations/${sb.orgId}/users?token=${sb.token}${q}`;
const records = (uid: string, path: string, q = '') =>
  `${sb.apiUrl}/organizations/${sb.orgId}/users/${uid}/${path}?token=${sb.token}${q}`;

describe('v2 authentication', () => {
  it('answers 403 with a message for an unknown token', async () => {
    const res = await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users?token=nope`);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ message: 'Invalid authentication credentials' });
  });
  it('answers 403 without a token', async () => {
    expect((await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users`)).status).toBe(403);
  });
  it('answers 401 with errors for a valid token of another organization', async () => {
    const res = await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users?token=${sb.otherToken}`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ errors: ['token not authorized to access the organization'] });
  });
  it('accepts api_key as an alias of token', async () => {
    expect((await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users?api_key=${sb.token}`)).status).toBe(
      200,
    );
  });
});

describe('users', () => {
  it('pages with offset as a page index and answers {} past the end', async () => {
    const all = sb.truth.users();
    const first = await getJson(users('&limit=4&offset=0'));
    const second = await getJson(users('&limit=4&offset=1'));
    const past = await getJson(users('&limit=4&offset=2'));
    expect(first.body.data).toHaveLength(4);
    expect(second.body.data).toHaveLength(all.length - 4);
    expect(past.status).toBe(200);
    expect(past.body).toEqual({});
    const seen = [...first.body.data, ...second.body.data].map((u: { uid: string }) => u.uid).sort();
    expect(seen).toEqual(all.map((u) => u.uid).sort());
    expect(first.body.meta).toMatchObject({ total: all.length, limit: 4, offset: 0 });
  });
  it('defaults limit to 100 and reduces a limit above 1000 to 1000', async () => {
    expect((await getJson(users())).body.meta.limit).toBe(100);
    expect((await getJson(users('&limit=5000'))).body.meta.limit).toBe(1000);
  });
  it('answers 400 plain text for a bad limit', async () => {
    const res = await getJson(users('&limit=abc'));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('text/plain');
  });
  it('returns users with the documented fields', async () => {
    const user = (await getJson(users('&limit=1'))).body.data[0];
    expect(Object.keys(user)).toEqual(
      expect.arrayContaining([
        'id',
        'uid',
        'marketplace',
        'mobile',
        'location',
        'status',
        'created_at',
        'updated_at',
      ]),
    );
    expect(user.marketplace).toEqual({ token: expect.any(String), url: expect.any(String) });
    expect(user.mobile).toEqual({ token: expect.any(String) });
    expect(user.location.country_code).toMatch(/^[A-Z]{2}$/);
  });
  it('sorts with sort[] (prefix - for descending) and filters with q[]', async () => {
    const asc = (await getJson(users('&sort[]=uid'))).body.data.map((u: { uid: string }) => u.uid);
    const desc = (await getJson(users('&sort[]=-uid'))).body.data.map((u: { uid: string }) => u.uid);
    expect(asc).toEqual([...asc].sort());
    expect(desc).toEqual([...asc].reverse());
    const target = sb.truth.users()[2]!;
    const filtered = await getJson(users(`&q[]=${encodeURIComponent(`uid=${target.uid}`)}`));
    expect(filtered.body.data.map((u: { uid: string }) => u.uid)).toEqual([target.uid]);
    const byZone = await getJson(
      users(`&q[]=${encodeURIComponent(`location.timezone=${target.location.timezone}`)}`),
    );
    expect(
      byZone.body.data.every(
        (u: { location: { timezone: string } }) => u.location.timezone === target.location.timezone,
      ),
    ).toBe(true);
  });
  it('gets one user by uid; an id instead of the uid is a 404', async () => {
    const target = sb.truth.users()[0]!;
    const one = await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users/${target.uid}?token=${sb.token}`);
    expect(one.status).toBe(200);
    expect(one.body.uid).toBe(target.uid);
    const byId = await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users/${target.id}?token=${sb.token}`);
    expect(byId.status).toBe(404);
  });
  it('provisions (201), refuses a duplicate uid (409) and a missing uid (400), then deletes', async () => {
    const url = users();
    const created = await sendJson(url, 'POST', {
      uid: 'provisioned-1',
      location: { timezone: 'Europe/Berlin' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      uid: 'provisioned-1',
      id: expect.any(String),
      created_at: expect.any(String),
    });
    expect(created.body.marketplace.token).toEqual(expect.any(String));
    expect((await sendJson(url, 'POST', { uid: 'provisioned-1' })).status).toBe(409);
    expect((await sendJson(url, 'POST', {})).status).toBe(400);
    expect(sb.truth.users().some((u) => u.uid === 'provisioned-1')).toBe(true);
    const del = await getJson(
      `${sb.apiUrl}/organizations/${sb.orgId}/users/provisioned-1?token=${sb.token}`,
      {
        method: 'DELETE',
      },
    );
    expect(del.status).toBe(200);
    expect(sb.truth.users().some((u) => u.uid === 'provisioned-1')).toBe(false);
    expect(
      (await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users/provisioned-1?token=${sb.token}`)).status,
    ).toBe(404);
  });
});

describe('record windows', () => {
  const paths = {
    measurements: 'measurement',
    nutrition: 'nutrition',
    intraday: 'intraday',
    summaries: 'summary',
    workouts: 'workout',
    sleep: 'sleep',
    cgm: 'cgm',
  } as const;

  it('serves every resource type for a 30-day window, matching the truth by start_time date', async () => {
    const start = '2026-02-14';
    const end = '2026-03-15';
    for (const user of sb.truth.users()) {
      for (const [path, type] of Object.entries(paths)) {
        const res = await getJson(records(user.uid, path, `&start_date=${start}&end_date=${end}`));
        expect(res.status).toBe(200);
        const expected = sb.truth
          .records({ type, uid: user.uid })
          .filter((r) => r.start_time.slice(0, 10) >= start && r.start_time.slice(0, 10) <= end);
        expect(res.body.data.map((r: { id: string }) => r.id).sort()).toEqual(
          expected.map((r) => r.id).sort(),
        );
        for (const record of res.body.data) expect(record.type).toBe(type);
      }
    }
  });

  it('carries the common fields and the type-specific ones', async () => {
    const all = sb.truth.records();
    const common = [
      'version',
      'id',
      'checksum',
      'type',
      'start_time',
      'end_time',
      'utc_offset',
      'offset_origin',
      'user',
      'log_id',
      'source',
      'metrics',
      'created_at',
      'deleted_at',
      'tags',
      'user_notes',
    ];
    for (const r of all.slice(0, 50)) expect(Object.keys(r)).toEqual(expect.arrayContaining(common));
    const m = all.find((r) => r.type === 'measurement')!;
    expect(m.start_time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(m.metrics[0]).toEqual({
      type: expect.any(String),
      origin: expect.any(String),
      unit: expect.any(String),
      value: expect.any(Number),
    });
    const n = all.find((r) => r.type === 'nutrition')!;
    expect(n).toMatchObject({
      name: expect.any(String),
      category: expect.stringMatching(/^(food|meal|other)$/),
    });
    const segment = (n.segments as { name: string; metrics: unknown[]; food: { serving: unknown }[] }[])[0]!;
    expect(segment.food[0]!.serving).toEqual({ amount: expect.any(Number), unit_name: expect.any(String) });
    const i = all.find((r) => r.type === 'intraday')!;
    expect(i.granularity).toEqual({ interval: 15, unit: 'minutes' });
    expect((i.metrics[0] as { data_points: unknown[] }).data_points[0]).toEqual({
      time: expect.any(String),
      value: expect.any(Number),
    });
    expect(i.tags.map((t) => t.name)).toEqual(['range_start', 'range_end']);
    expect(all.some((r) => r.deleted_at !== null)).toBe(true);
    expect(all.some((r) => r.source.type === 'nokia')).toBe(true);
    expect(all.some((r) => r.source.type === 'withings')).toBe(true);
  });

  it('defaults the window to the current UTC day', async () => {
    const user = sb.truth.users()[0]!;
    const res = await getJson(records(user.uid, 'summaries'));
    const today = sb.control.now().slice(0, 10);
    const expected = sb.truth
      .records({ type: 'summary', uid: user.uid })
      .filter((r) => r.start_time.startsWith(today));
    expect(res.body.data.map((r: { id: string }) => r.id).sort()).toEqual(expected.map((r) => r.id).sort());
  });

  it('answers 400 plain text for more than 30 days, a bad date, or end before start', async () => {
    const uid = sb.truth.users()[0]!.uid;
    for (const q of [
      '&start_date=2026-01-01&end_date=2026-03-01',
      '&start_date=2026-02-30&end_date=2026-03-01',
      '&start_date=yesterday',
      '&start_date=2026-03-10&end_date=2026-03-01',
    ]) {
      const res = await getJson(records(uid, 'measurements', q));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toContain('text/plain');
      expect(res.text.length).toBeGreaterThan(0);
    }
    expect(
      (await getJson(records(uid, 'measurements', '&start_date=2026-02-01&end_date=2026-03-03'))).status,
    ).toBe(200);
  });

  it('filters by one or several sources', async () => {
    const user = sb.truth
      .users()
      .find((u) => sb.truth.records({ uid: u.uid, type: 'measurement' }).length > 0)!;
    const window = '&start_date=2026-02-14&end_date=2026-03-15';
    const one = await getJson(records(user.uid, 'measurements', `${window}&source=withings`));
    expect(one.body.data.every((r: { source: { type: string } }) => r.source.type === 'withings')).toBe(true);
    const both = await getJson(records(user.uid, 'measurements', `${window}&source=withings,nokia`));
    expect(both.body.data.length).toBeGreaterThanOrEqual(one.body.data.length);
    expect(
      both.body.data.every((r: { source: { type: string } }) =>
        ['withings', 'nokia'].includes(r.source.type),
      ),
    ).toBe(true);
  });

  it('answers 400 for a malformed path encoding', async () => {
    const res = await getJson(
      `${sb.apiUrl}/organizations/${sb.orgId}/users/%E0%A4%A/measurements?token=${sb.token}`,
    );
    expect(res.status).toBe(400);
  });

  it('answers 404 for an unknown user and keeps auth errors first', async () => {
    expect((await getJson(records('nobody', 'measurements'))).status).toBe(404);
    const res = await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users/nobody/measurements?token=bad`);
    expect(res.status).toBe(403);
  });
});

describe('connection events', () => {
  const conns = (q = '') => `${sb.apiUrl}/organizations/${sb.orgId}/connections?token=${sb.token}${q}`;

  it('pages by page index with meta and answers {} past the end', async () => {
    const total = sb.truth.connections().length;
    const first = await getJson(conns('&limit=10'));
    expect(first.body.meta).toEqual({ limit: 10, page: 0, total });
    const ids: string[] = [];
    for (let page = 0; ; page++) {
      const res = await getJson(conns(`&limit=10&page=${page}`));
      if (!res.body.connections) {
        expect(res.body).toEqual({});
        break;
      }
      ids.push(...res.body.connections.map((c: { id: string }) => c.id));
    }
    expect(ids).toEqual(sb.truth.connections().map((c) => c.id));
    expect((await getJson(conns())).body.meta.limit).toBe(25);
  });

  it('carries create and delete events with their fields', async () => {
    const all = sb.truth.connections();
    const del = all.find((c) => c.action === 'delete')!;
    expect(del.deleted_at).toEqual(expect.any(String));
    expect(del.deleted_reason).toEqual(expect.any(String));
    const create = all.find((c) => c.action === 'create')!;
    expect(create.deleted_at).toBeUndefined();
    expect(create.user).toEqual({
      uid: expect.any(String),
      user_id: expect.any(String),
      organization_id: sb.orgId,
    });
    expect(create.event_time).toMatch(/Z$/);
  });

  it('filters by created_at date within start_date..end_date', async () => {
    const res = await getJson(conns('&start_date=2026-02-20&end_date=2026-03-15&limit=1000'));
    const expected = sb.truth.connections().filter((c) => c.created_at.slice(0, 10) >= '2026-02-20');
    expect(res.body.connections?.length ?? 0).toBe(expected.length);
  });

  it('answers 400 when start_date comes without end_date, or the range exceeds 30 days', async () => {
    expect((await getJson(conns('&start_date=2026-03-01'))).status).toBe(400);
    expect((await getJson(conns('&start_date=2026-01-01&end_date=2026-03-01'))).status).toBe(400);
    expect((await getJson(conns('&start_date=2026-13-01&end_date=2026-03-01'))).status).toBe(400);
  });

  it('also answers on /connections without the organization prefix', async () => {
    const res = await getJson(`${sb.apiUrl}/connections?token=${sb.token}&limit=5`);
    expect(res.body.connections).toHaveLength(5);
  });

  it('serves only events on or after 2025-07-01', async () => {
    const early = await startTestSandbox({ now: new Date('2025-07-10T12:00:00Z'), users: 4 });
    try {
      const truth = early.truth.connections();
      const available = truth.filter((c) => c.created_at >= '2025-07-01');
      expect(available.length).toBeLessThan(truth.length);
      const res = await getJson(
        `${early.apiUrl}/organizations/${early.orgId}/connections?token=${early.token}&limit=1000`,
      );
      expect(res.body.connections.map((c: { id: string }) => c.id)).toEqual(available.map((c) => c.id));
    } finally {
      await early.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { getJson, sendJson, startTestSandbox } from './fixtures.ts';
import { startReceiver } from './notification-receiver.ts';
import { openSse } from './sse-client.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startTestSandbox();
});
afterAll(() => sb.close());

const ctl = (path: string) => `${sb.controlUrl}${path}`;

describe('ground truth', () => {
  it('serves the same truth over HTTP as programmatically', async () => {
    expect((await getJson(ctl('/truth/users'))).body).toEqual(sb.truth.users());
    expect((await getJson(ctl('/truth/connections'))).body).toEqual(sb.truth.connections());
    const uid = sb.truth.users()[0]!.uid;
    expect((await getJson(ctl(`/truth/records?type=sleep&uid=${uid}`))).body).toEqual(
      sb.truth.records({ type: 'sleep', uid }),
    );
    expect((await getJson(ctl('/truth/legacy-records?object=weight'))).body).toEqual(
      sb.truth.legacyRecords('weight'),
    );
    expect((await getJson(ctl('/truth/legacy-users'))).body).toEqual(sb.truth.legacyUsers());
    expect((await getJson(ctl('/truth/events'))).body).toHaveLength(sb.truth.events().length);
    expect((await getJson(ctl('/truth/streams'))).body).toEqual([]);
  });

  it('generates every resource type, changed and deleted records, and ordered events', () => {
    const types = new Set(sb.truth.records().map((r) => r.type));
    expect([...types].sort()).toEqual([
      'cgm',
      'intraday',
      'measurement',
      'nutrition',
      'sleep',
      'summary',
      'workout',
    ]);
    const events = sb.truth.events();
    const created = events.map((e) => e.created_at);
    expect(created).toEqual([...created].sort());
    const ids = events.map((e) => (e.payload as { id: string }).id);
    expect(ids.length).toBeGreaterThan(new Set(ids).size); // some records have several versions
    const objects = new Set(sb.truth.legacyRecords().map((r) => r.object));
    expect(objects.size).toBeGreaterThanOrEqual(7);
  });

  it('is deterministic for a seed and clock anchor', async () => {
    const again = await startTestSandbox();
    try {
      expect(again.truth.users()).toEqual(
        sb.truth.users().map((u) => ({
          ...u,
          marketplace: { ...u.marketplace, url: u.marketplace.url.replace(sb.apiUrl, again.apiUrl) },
        })),
      );
      expect(again.truth.records()).toEqual(sb.truth.records());
      expect(again.truth.connections()).toEqual(sb.truth.connections());
      expect(again.truth.legacyRecords()).toEqual(sb.truth.legacyRecords());
      expect(again.truth.events()).toEqual(sb.truth.events());
    } finally {
      await again.close();
    }
  });
});

describe('control operations', () => {
  it('adds users, records, updates and deletions, visible through the API', async () => {
    const user = await sendJson(ctl('/users'), 'POST', { uid: 'ctl-user', timezone: 'Europe/London' });
    expect(user.status).toBe(201);
    expect((await sendJson(ctl('/users'), 'POST', { uid: 'ctl-user' })).status).toBe(409);
    const added = await sendJson(ctl('/records'), 'POST', {
      uid: 'ctl-user',
      type: 'measurement',
      day: '2026-03-10',
    });
    expect(added.status).toBe(201);
    const id = added.body.id;
    const url = `${sb.apiUrl}/organizations/${sb.orgId}/users/ctl-user/measurements?token=${sb.token}&start_date=2026-03-10&end_date=2026-03-10`;
    expect((await getJson(url)).body.data).toEqual([added.body]);
    const updated = await sendJson(ctl(`/records/${id}`), 'PUT', {});
    expect(updated.body.checksum).not.toBe(added.body.checksum);
    expect(updated.body.created_at > added.body.created_at).toBe(true);
    expect((await getJson(url)).body.data[0].checksum).toBe(updated.body.checksum);
    const deleted = await getJson(ctl(`/records/${id}`), { method: 'DELETE' });
    expect(deleted.body.deleted_at).toEqual(expect.any(String));
    expect((await getJson(url)).body.data[0].deleted_at).toBe(deleted.body.deleted_at);
    expect((await sendJson(ctl('/records/nope'), 'PUT', {})).status).toBe(404);
    expect((await getJson(ctl('/users/ctl-user'), { method: 'DELETE' })).status).toBe(200);
  });

  it('deleteKeepsChecksum: a delete keeps the checksum of the version it deletes', async () => {
    const uid = sb.truth.users()[0]!.uid;
    const added = await sendJson(ctl('/records'), 'POST', { uid, type: 'measurement', day: '2026-03-11' });
    const changed = await sendJson(ctl('/records'), 'POST', { uid, type: 'measurement', day: '2026-03-11' });
    try {
      expect((await sendJson(ctl('/faults'), 'POST', { deleteKeepsChecksum: true })).status).toBe(200);
      const kept = await getJson(ctl(`/records/${added.body.id}`), { method: 'DELETE' });
      expect(kept.body).toMatchObject({ checksum: added.body.checksum, deleted_at: expect.any(String) });
      expect(sb.truth.records().find((r) => r.id === added.body.id)?.checksum).toBe(added.body.checksum);
    } finally {
      await sendJson(ctl('/faults'), 'POST', { deleteKeepsChecksum: false });
    }
    const other = await getJson(ctl(`/records/${changed.body.id}`), { method: 'DELETE' });
    expect(other.body.checksum).not.toBe(changed.body.checksum);
  });

  it('records connection events for connect and disconnect', async () => {
    const uid = sb.truth.users()[1]!.uid;
    const created = await sendJson(ctl('/connections'), 'POST', { uid, source: 'omron' });
    const removed = await sendJson(ctl('/connections'), 'POST', { uid, source: 'omron', action: 'delete' });
    expect(created.body).toMatchObject({ action: 'create', source: { type: 'omron' } });
    expect(removed.body).toMatchObject({ action: 'delete', deleted_at: expect.any(String) });
    const day = sb.control.now().slice(0, 10);
    const res = await getJson(
      `${sb.apiUrl}/organizations/${sb.orgId}/connections?token=${sb.token}&start_date=${day}&end_date=${day}&limit=1000`,
    );
    const ids = res.body.connections.map((c: { id: string }) => c.id);
    expect(ids).toEqual(expect.arrayContaining([created.body.id, removed.body.id]));
  });

  it('adds and updates legacy records, issues PINs and moves the clock', async () => {
    const userId = sb.truth.legacyUsers()[0]!._id;
    const rec = await sendJson(ctl('/legacy/records'), 'POST', {
      object: 'weight',
      user_id: userId,
      fields: { weight: 70 },
    });
    expect(rec.status).toBe(201);
    expect(rec.body.weight).toBe(70);
    const upd = await sendJson(ctl(`/legacy/records/weight/${rec.body._id}`), 'PUT', { weight: 71 });
    expect(upd.body.weight).toBe(71);
    expect(sb.truth.legacyRecords('weight').find((r) => r._id === rec.body._id)?.weight).toBe(71);
    expect((await getJson(ctl(`/legacy/records/weight/${rec.body._id}`), { method: 'DELETE' })).status).toBe(
      200,
    );
    const pin = await sendJson(ctl('/pins'), 'POST', {});
    expect(pin.body.pin).toMatch(/^\d{7}$/);
    const before = (await getJson(ctl('/clock'))).body.now;
    const after = (await sendJson(ctl('/clock'), 'POST', { advanceMs: 3_600_000 })).body.now;
    expect(Date.parse(after) - Date.parse(before)).toBeGreaterThanOrEqual(3_600_000);
    await sendJson(ctl('/clock'), 'POST', { advanceMs: -3_600_000 });
  });

  it('registers push URLs and flushes notifications over HTTP', async () => {
    const receiver = await startReceiver();
    try {
      await sendJson(ctl('/push-urls'), 'POST', { url: receiver.url });
      const userId = sb.truth.legacyUsers()[0]!._id;
      await sendJson(ctl('/legacy/records'), 'POST', { object: 'biometrics', user_id: userId });
      const deliveries = await sendJson(ctl('/notifications/flush'), 'POST', {});
      expect(deliveries.body.some((d: { status: number }) => d.status === 204)).toBe(true);
      expect(receiver.bodies).toHaveLength(1);
      await sendJson(ctl('/push-urls'), 'DELETE', { url: receiver.url });
      await sendJson(ctl('/partner-notification-url'), 'PUT', { url: null });
    } finally {
      await receiver.close();
    }
  });

  it('runs a live feed whose events reach a stream', async () => {
    const stream = await sendJson(`${sb.streamsUrl}/streams?token=${sb.token}`, 'POST', { name: 'live' });
    const c = await openSse(`${sb.streamsUrl}/streams/${stream.body.id}/connect?token=${sb.token}`);
    await sendJson(ctl('/live-feed'), 'POST', { ratePerSecond: 50 });
    const got = [
      await c.nextData<{ id: string }>(),
      await c.nextData<{ id: string }>(),
      await c.nextData<{ id: string }>(),
    ];
    await getJson(ctl('/live-feed'), { method: 'DELETE' });
    const current = new Set(sb.truth.records().map((r) => r.id));
    for (const r of got) expect(current.has(r.id)).toBe(true);
    c.close();
  });

  it('reports request statistics per endpoint and status, and resets them', async () => {
    await sendJson(ctl('/stats/reset'), 'POST', {});
    await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users?token=${sb.token}`);
    await getJson(`${sb.apiUrl}/organizations/${sb.orgId}/users?token=bad`);
    const stats = (await getJson(ctl('/stats'))).body;
    expect(stats.total).toBe(2);
    expect(stats.byEndpoint['GET /organizations/:org/users']).toEqual({ '200': 1, '403': 1 });
    expect(Object.keys(stats.perTokenMinute)).toEqual(expect.arrayContaining([sb.token, 'bad']));
  });

  it('answers 404 for unknown control routes and 400 for a bad body', async () => {
    expect((await getJson(ctl('/nope'))).status).toBe(404);
    const bad = await getJson(ctl('/users'), {
      method: 'POST',
      body: 'not json',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
  });
});

import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { getJson, sendJson, startTestSandbox } from './fixtures.ts';
import { startReceiver } from './notification-receiver.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startTestSandbox({ legacyOrgId: 'legacy-org', legacyToken: 'legacy-token' });
});
afterAll(() => sb.close());

const org = () => `${sb.legacyUrl}/v1/organizations/${sb.legacyOrgId}`;
const tok = () => `access_token=${sb.legacyToken}`;
const firstUser = () => sb.truth.legacyUsers()[0]!;

describe('credentials and users', () => {
  it('verifies credentials with the organization summary (401 on bad credentials)', async () => {
    const ok = await getJson(`${org()}.json?${tok()}`);
    expect(ok.status).toBe(200);
    expect(ok.body.organization).toMatchObject({
      name: expect.any(String),
      users: expect.any(Number),
      users_provisioned: sb.truth.legacyUsers().length,
      activities: sb.truth.legacyRecords().length,
      connections: expect.any(Number),
      organizations: [],
    });
    expect(ok.body.summary).toMatchObject({ status: 200 });
    const bad = await getJson(`${org()}.json?access_token=wrong`);
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ code: 401, message: expect.any(String) });
  });

  it('answers 401 for an unknown token and 403 for a token of another organization', async () => {
    expect((await getJson(`${org()}/fitness.json?access_token=wrong`)).status).toBe(401);
    const forbidden = await getJson(`${org()}/fitness.json?access_token=${sb.token}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ code: 403, message: expect.any(String) });
  });

  it('provisions a user (201) and refuses the same uid again (409)', async () => {
    const res = await sendJson(`${org()}/users.json`, 'POST', {
      user: { uid: 'legacy-new' },
      access_token: sb.legacyToken,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      code: 201,
      user: { _id: expect.any(String), access_token: expect.any(String) },
    });
    const again = await sendJson(`${org()}/users.json`, 'POST', {
      user: { uid: 'legacy-new' },
      access_token: sb.legacyToken,
    });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ code: 409, message: expect.any(String) });
  });

  it('refuses to provision without a uid (422)', async () => {
    const res = await sendJson(`${org()}/users.json`, 'POST', { user: {}, access_token: sb.legacyToken });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ code: 422, message: expect.any(String) });
  });

  it('web authorization: 201 for a new uid, 200 for a known one, 401 without signature', async () => {
    const url = `${org()}/connect/authorization`;
    const body = { uid: 'web-user', signature: 'sig', access_token: sb.legacyToken };
    const first = await sendJson(url, 'POST', body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      code: 201,
      message: expect.any(String),
      user: { _id: expect.any(String), uid: 'web-user', authentication_token: expect.any(String) },
      consumer_name: expect.any(String),
    });
    const second = await sendJson(url, 'POST', body);
    expect(second.status).toBe(200);
    expect(second.body.user._id).toBe(first.body.user._id);
    expect((await sendJson(url, 'POST', { ...body, signature: '' })).status).toBe(401);
  });

  it('PIN authorization: 201 with a valid PIN, 401 with code and message once expired or with a bad token', async () => {
    const url = `${org()}/authorization/new_user`;
    const { pin } = sb.control.issuePin();
    expect(pin).toMatch(/^\d{7}$/);
    const ok = await sendJson(url, 'POST', { user: { uid: 'pin-user' }, pin, access_token: sb.legacyToken });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      code: 201,
      user: { _id: expect.any(String), uid: 'pin-user', access_token: expect.any(String) },
      application: expect.any(String),
    });
    const reused = await sendJson(url, 'POST', {
      user: { uid: 'pin-user' },
      pin,
      access_token: sb.legacyToken,
    });
    expect(reused.status).toBe(401);

    const late = sb.control.issuePin('pin-late');
    sb.control.advanceClock(29 * 60_000);
    const stillValid = sb.control.issuePin('pin-ok');
    sb.control.advanceClock(2 * 60_000);
    const expired = await sendJson(`${org()}/authorization`, 'POST', {
      pin: late.pin,
      access_token: sb.legacyToken,
    });
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ code: 401, message: 'PIN expired' });
    const fine = await sendJson(url, 'POST', { pin: stillValid.pin, access_token: sb.legacyToken });
    expect(fine.status).toBe(201);
    expect(fine.body.user.uid).toBe('pin-ok');
    const badToken = await sendJson(url, 'POST', { pin: sb.control.issuePin().pin, access_token: 'nope' });
    expect(badToken.status).toBe(401);
    expect(badToken.body).toEqual({ code: 401, message: expect.any(String) });
    sb.control.advanceClock(-31 * 60_000);
  });
});

describe('records', () => {
  const userUrl = (object: string, rest = '') => `${org()}/users/${firstUser()._id}/${object}${rest}.json`;

  it('creates one record (201) and converts an offset timestamp on POST', async () => {
    const res = await sendJson(userUrl('fitness'), 'POST', {
      fitness: {
        timestamp: '2026-03-14T08:00:00-05:00',
        type: 'Running',
        distance: 5000,
        duration: 1800,
        activity_id: 'fit-1',
        extras: { shoe: 'x' },
      },
      access_token: sb.legacyToken,
    });
    expect(res.status).toBe(201);
    expect(res.body.fitness).toMatchObject({
      _id: expect.any(String),
      timestamp: '2026-03-14T13:00:00Z',
      utc_offset: '-05:00',
      source: expect.any(String),
      source_name: expect.any(String),
      last_updated: expect.any(String),
      activity_id: 'fit-1',
    });
    expect(sb.truth.legacyRecords('fitness').some((r) => r._id === res.body.fitness._id)).toBe(true);
  });

  it('refuses a non-UTC or non-ISO timestamp with 422', async () => {
    for (const timestamp of ['2026-03-14 08:00', '14/03/2026', '2026-03-14T08:00:00', 'now']) {
      const res = await sendJson(userUrl('weight'), 'POST', {
        weight: { timestamp, weight: 80 },
        access_token: sb.legacyToken,
      });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 422, message: expect.any(String) });
    }
  });

  it('creates arrays: 201 with per-item errors when some fail, 422 when none is created, at most 100', async () => {
    const res = await sendJson(userUrl('routine'), 'POST', {
      routine: [
        { timestamp: '2026-03-13T05:00:00Z', utc_offset: '-05:00', steps: 1000, activity_id: 'r-1' },
        { timestamp: '2026-03-13T05:00:00', steps: 1, activity_id: 'r-bad' },
        { timestamp: '2026-03-14T05:00:00Z', utc_offset: '-05:00', steps: 2000, activity_id: 'r-1' },
      ],
      access_token: sb.legacyToken,
    });
    expect(res.status).toBe(201);
    expect(res.body.routine).toHaveLength(1);
    expect(res.body.errors).toEqual([
      { code: 422, message: expect.any(String), errors: expect.any(String), activity_id: 'r-bad' },
      { code: 409, message: expect.any(String), errors: expect.any(String), activity_id: 'r-1' },
    ]);
    const none = await sendJson(userUrl('routine'), 'POST', {
      routine: [{ timestamp: 'bad', activity_id: 'x' }],
      access_token: sb.legacyToken,
    });
    expect(none.status).toBe(422);
    expect(none.body.errors).toHaveLength(1);
    const tooMany = await sendJson(userUrl('routine'), 'POST', {
      routine: Array.from({ length: 101 }, (_, i) => ({
        timestamp: '2026-03-13T05:00:00Z',
        activity_id: `m-${i}`,
      })),
      access_token: sb.legacyToken,
    });
    expect(tooMany.status).toBe(422);
  });

  it('reads, updates (no offset conversion on PUT) and deletes a record', async () => {
    const created = await sendJson(userUrl('sleep'), 'POST', {
      sleep: { timestamp: '2026-03-14T06:00:00Z', total_sleep: 420, activity_id: 'sl-1' },
      access_token: sb.legacyToken,
    });
    const id = created.body.sleep._id;
    const one = await getJson(`${userUrl('sleep', `/${id}`)}?${tok()}`);
    expect(one.status).toBe(200);
    expect(one.body.sleep).toHaveLength(1);
    expect(one.body.summary.results).toBe(1);
    const put = await sendJson(userUrl('sleep', `/${id}`), 'PUT', {
      sleep: { total_sleep: 400 },
      access_token: sb.legacyToken,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ code: 200, sleep: { _id: id, total_sleep: 400 } });
    const badPut = await sendJson(userUrl('sleep', `/${id}`), 'PUT', {
      sleep: { timestamp: '2026-03-14T06:00:00+02:00' },
      access_token: sb.legacyToken,
    });
    expect(badPut.status).toBe(422);
    const del = await sendJson(userUrl('sleep', `/${id}`), 'DELETE', { access_token: sb.legacyToken });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ code: 200, message: expect.any(String) });
    expect((await getJson(`${userUrl('sleep', `/${id}`)}?${tok()}`)).status).toBe(404);
  });

  it('answers 404 for an unknown user or record', async () => {
    expect((await getJson(`${org()}/users/nobody/fitness.json?${tok()}`)).status).toBe(404);
    expect((await getJson(`${userUrl('fitness', '/nope')}?${tok()}`)).status).toBe(404);
  });

  it('answers 406 for a body that is not JSON', async () => {
    const res = await getJson(userUrl('fitness'), {
      method: 'POST',
      body: '<xml/>',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(406);
    expect(res.body).toEqual({ code: 406, message: expect.any(String) });
  });

  it('answers 429 with code and message when the request budget is spent', async () => {
    sb.control.setFaults({ requestBudget: { limit: 1, windowMs: 60_000 } });
    try {
      expect((await getJson(`${org()}/fitness.json?${tok()}`)).status).toBe(200);
      const limited = await getJson(`${org()}/fitness.json?${tok()}`);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ code: 429, message: expect.any(String) });
    } finally {
      sb.control.resetFaults();
    }
  });

  it('echoes the Service-Version header', async () => {
    const res = await getJson(`${org()}/fitness.json?${tok()}`, {
      headers: { 'Service-Version': '2025-01-15' },
    });
    expect(res.headers.get('service-version')).toBe('2025-01-15');
  });
});

describe('lists and paging', () => {
  const window = 'start_date=2026-02-01T00:00:00Z&end_date=2026-03-16T00:00:00Z';

  it('pages the org-level list by record offset; next is null after the last page', async () => {
    const total = sb.truth.legacyRecords('routine').filter((r) => r.timestamp >= '2026-02-01').length;
    const seen: string[] = [];
    let url: string | null = `${org()}/routine.json?${tok()}&${window}&limit=25`;
    let pages = 0;
    while (url) {
      const res = await getJson(url);
      expect(res.body.summary).toMatchObject({ status: 200, results: total, limit: 25, offset: pages * 25 });
      seen.push(...res.body.routine.map((r: { _id: string }) => r._id));
      url = res.body.summary.next;
      pages++;
    }
    expect(seen).toHaveLength(total);
    expect(new Set(seen).size).toBe(total);
    expect(pages).toBe(Math.ceil(total / 25));
  });

  it('also accepts page (1-based) and reports previous', async () => {
    const byOffset = await getJson(`${org()}/routine.json?${tok()}&${window}&limit=10&offset=10`);
    const byPage = await getJson(`${org()}/routine.json?${tok()}&${window}&limit=10&page=2`);
    expect(byPage.body.routine).toEqual(byOffset.body.routine);
    expect(byPage.body.summary.previous).toContain('offset=0');
  });

  it('defaults limit to 100 and reduces it to 1000', async () => {
    expect((await getJson(`${org()}/routine.json?${tok()}`)).body.summary.limit).toBe(100);
    expect((await getJson(`${org()}/routine.json?${tok()}&limit=5000`)).body.summary.limit).toBe(1000);
  });

  it('filters user-level lists by user and timestamp; expanded=1 adds extras and activity_id', async () => {
    const user = firstUser();
    const res = await getJson(`${org()}/users/${user._id}/routine.json?${tok()}&${window}&limit=1000`);
    const expected = sb.truth
      .legacyRecords('routine')
      .filter((r) => r.user_id === user._id && r.timestamp >= '2026-02-01');
    expect(res.body.routine).toHaveLength(expected.length);
    expect(res.body.routine[0].extras).toBeUndefined();
    expect(res.body.routine[0].activity_id).toBeUndefined();
    const expanded = await getJson(`${org()}/users/${user._id}/routine.json?${tok()}&${window}&expanded=1`);
    expect(expanded.body.routine[0]).toMatchObject({
      extras: expect.any(Object),
      activity_id: expect.any(String),
    });
  });

  it('latest filters by last_updated, not by activity date', async () => {
    const late = sb.truth
      .legacyRecords()
      .find((r) => Date.parse(r.last_updated) - Date.parse(r.timestamp) > 2 * 86_400_000)!;
    const object = late.object;
    const start = `${late.last_updated.slice(0, 10)}T00:00:00Z`;
    const end = `${late.last_updated.slice(0, 10)}T23:59:59Z`;
    const res = await getJson(
      `${org()}/${object}/latest.json?${tok()}&start_date=${start}&end_date=${end}&limit=1000`,
    );
    const expected = sb.truth
      .legacyRecords(object)
      .filter((r) => r.last_updated >= start && r.last_updated <= end);
    const ids = res.body[object].map((r: { _id: string }) => r._id);
    expect(ids.sort()).toEqual(expected.map((r) => r._id).sort());
    expect(ids).toContain(late._id);
    const byActivity = await getJson(
      `${org()}/${object}.json?${tok()}&start_date=${start}&end_date=${end}&limit=1000`,
    );
    expect(byActivity.body[object].map((r: { _id: string }) => r._id)).not.toContain(late._id);
    const user = await getJson(
      `${org()}/users/${late.user_id}/${object}/latest.json?${tok()}&start_date=${start}&end_date=${end}`,
    );
    expect(user.body[object].map((r: { _id: string }) => r._id)).toContain(late._id);
    expect(user.body[object].every((r: { user_id: string }) => r.user_id === late.user_id)).toBe(true);
  });

  it('accepts both date forms and refuses others with 422', async () => {
    const ok = await getJson(
      `${org()}/fitness.json?${tok()}&start_date=2026-03-01T00:00:00.000-05:00&end_date=2026-03-15T00:00:00Z`,
    );
    expect(ok.status).toBe(200);
    expect((await getJson(`${org()}/fitness.json?${tok()}&start_date=March`)).status).toBe(422);
  });

  it('serves the short forms with a user authentication token', async () => {
    const user = firstUser();
    const res = await getJson(
      `${sb.legacyUrl}/v1/routine.json?authentication_token=${user.access_token}&${window}`,
    );
    expect(res.status).toBe(200);
    expect(res.body.routine.every((r: { user_id: string }) => r.user_id === user._id)).toBe(true);
    const latest = await getJson(
      `${sb.legacyUrl}/v1/routine/latest.json?authentication_token=${user.access_token}`,
    );
    expect(latest.status).toBe(200);
    expect((await getJson(`${sb.legacyUrl}/v1/routine.json?authentication_token=bad`)).status).toBe(401);
  });
});

describe('notifications', () => {
  it("POSTs push notifications in the provider's documented shape, signed, that build the retrieval call", async () => {
    const receiver = await startReceiver();
    try {
      sb.control.registerPushUrl(receiver.url);
      const user = firstUser();
      const created = await sendJson(`${org()}/users/${user._id}/diabetes.json`, 'POST', {
        diabetes: [
          { timestamp: '2026-03-15T07:00:00Z', blood_glucose: 101, activity_id: 'd-1' },
          { timestamp: '2026-03-15T08:00:00Z', blood_glucose: 140, activity_id: 'd-2' },
        ],
        access_token: sb.legacyToken,
      });
      await sb.control.flushNotifications();
      expect(receiver.bodies).toHaveLength(1);
      const body = receiver.bodies[0] as {
        data: { _id: string; activity_type: string; activity_date: string; source: string }[];
      };
      expect(body).toEqual({
        data: [
          {
            _id: user._id,
            activity_type: 'diabetes',
            activity_date: '2026-03-15T07:00:00+00:00',
            source: created.body.diabetes[0].source,
          },
          {
            _id: user._id,
            activity_type: 'diabetes',
            activity_date: '2026-03-15T08:00:00+00:00',
            source: created.body.diabetes[1].source,
          },
        ],
      });
      // Signed as documented: Base64(HMAC-SHA1(application secret, token + "notification" + timestamp)).
      const headers = receiver.headers[0]!;
      const timestamp = String(headers['x-validic-timestamp']);
      expect(timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\d{12}$/);
      expect(Math.abs(Date.parse(`${timestamp.slice(0, 19)}Z`) - Date.now())).toBeLessThan(60_000);
      expect(headers['x-validic-signature']).toBe(
        createHmac('sha1', sb.applicationSecret)
          .update(`${sb.legacyToken}notification${timestamp}`)
          .digest('base64'),
      );
      expect(headers['content-type']).toBe('application/json');
      // The suggested retrieval call finds the announced record.
      const item = body.data[0]!;
      const fetched = await getJson(
        `${org()}/users/${item._id}/${item.activity_type}.json?${tok()}&start_date=${encodeURIComponent(item.activity_date)}&end_date=${encodeURIComponent(item.activity_date)}&source=${item.source}`,
      );
      expect(fetched.body.diabetes.map((r: { _id: string }) => r._id)).toEqual([
        created.body.diabetes[0]._id,
      ]);
      sb.control.unregisterPushUrl(receiver.url);
    } finally {
      await receiver.close();
    }
  });

  it('POSTs a disconnect notification to the partner notification URL', async () => {
    const receiver = await startReceiver();
    try {
      sb.control.setPartnerNotificationUrl(receiver.url);
      const user = sb.truth.users()[0]!;
      const only = user.sources.map((s) => s.type);
      for (const source of only) sb.control.disconnectSource(user.uid, source);
      await sb.control.flushNotifications();
      const last = receiver.bodies.at(-1) as { data: Record<string, unknown> };
      expect(last.data).toMatchObject({
        type: 'disconnect',
        message: expect.any(String),
        third_party: expect.any(String),
        connected_third_parties: [],
        user: { _id: user.id, uid: user.uid },
      });
      sb.control.setPartnerNotificationUrl(null);
    } finally {
      await receiver.close();
    }
  });
});

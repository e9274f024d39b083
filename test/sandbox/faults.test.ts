import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useBeforeAll } from '../helpers/use-before-all.ts';
import { getJson, sendJson, startTestSandbox } from './fixtures.ts';
import { openSse, type SseConnection } from './sse-client.ts';

const sb = useBeforeAll(startTestSandbox, (sandbox) => sandbox.close());
const open: SseConnection[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.close();
  sb.control.resetFaults();
  await vi.waitFor(() => expect(sb.truth.streams().every((s) => s.members === 0)).toBe(true));
  const list = await getJson(`${sb.streamsUrl}/streams?token=${sb.token}`);
  for (const s of list.body.streams)
    await getJson(`${sb.streamsUrl}/streams/${s.id}?token=${sb.token}`, { method: 'DELETE' });
});

const usersUrl = () => `${sb.apiUrl}/organizations/${sb.orgId}/users?token=${sb.token}`;
const newStream = async () =>
  (await sendJson(`${sb.streamsUrl}/streams?token=${sb.token}`, 'POST', { name: 'f' })).body.id as string;
const connect = async (id: string) => {
  const c = await openSse(`${sb.streamsUrl}/streams/${id}/connect?token=${sb.token}`);
  if (c.status === 200) open.push(c);
  return c;
};
const uid = () => sb.truth.users()[0]!.uid;

describe('request faults', () => {
  it('adds latency to matching paths only', async () => {
    sb.control.setFaults({ latencyMs: 400, paths: ['/users'] });
    const order: string[] = [];
    await Promise.all([
      getJson(usersUrl()).then(() => order.push('slow')),
      getJson(`${sb.apiUrl}/organizations/${sb.orgId}/connections?token=${sb.token}`).then(() =>
        order.push('fast'),
      ),
    ]);
    expect(order).toEqual(['fast', 'slow']);
  });

  it('answers 429 without Retry-After, and with it when configured', async () => {
    sb.control.setFaults({ rate429: 1 });
    const plain = await getJson(usersUrl());
    expect(plain.status).toBe(429);
    expect(plain.headers.get('retry-after')).toBeNull();
    sb.control.setFaults({ retryAfterSeconds: 3 });
    const told = await getJson(usersUrl());
    expect(told.status).toBe(429);
    expect(told.headers.get('retry-after')).toBe('3');
    expect(sb.control.stats().rateLimited).toBeGreaterThanOrEqual(2);
  });

  it('answers 5xx at the configured rate and status', async () => {
    sb.control.setFaults({ rate5xx: 1, status5xx: 502 });
    const res = await getJson(usersUrl());
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ status: 502, error: expect.any(String) });
  });

  it('cuts bodies off mid-way after promising the whole Content-Length', async () => {
    sb.control.setFaults({ truncateRate: 1 });
    const res = await request(usersUrl());
    expect(res.statusCode).toBe(200);
    const promised = Number(res.headers['content-length']);
    expect(promised).toBeGreaterThan(0);
    await expect(res.body.text()).rejects.toThrow();
  });

  it('applies rates deterministically given the seed', async () => {
    const run = async (): Promise<number[]> => {
      const other = await startTestSandbox({ faults: { rate429: 0.3, rate5xx: 0.2 } });
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 20; i++)
          statuses.push(
            (await getJson(`${other.apiUrl}/organizations/${other.orgId}/users?token=${other.token}`)).status,
          );
        return statuses;
      } finally {
        await other.close();
      }
    };
    const a = await run();
    expect(await run()).toEqual(a);
    expect(new Set(a)).toEqual(new Set([200, 429, 503]));
  });

  it('spends a request budget per token and window, then answers 429 with Retry-After until the window turns', async () => {
    sb.control.setFaults({ requestBudget: { limit: 3, windowMs: 60_000 } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await getJson(usersUrl())).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await getJson(usersUrl());
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another token has its own budget.
    expect(
      (await getJson(`${sb.apiUrl}/organizations/${sb.otherOrgId}/users?token=${sb.otherToken}`)).status,
    ).toBe(200);
    sb.control.advanceClock(60_000);
    expect((await getJson(usersUrl())).status).toBe(200);
  });

  it('enforces requestsPerHour as the platform limit (429, no Retry-After) and counts it', async () => {
    const limited = await startTestSandbox({ requestsPerHour: 2 });
    try {
      const url = `${limited.apiUrl}/organizations/${limited.orgId}/users?token=${limited.token}`;
      const res = [await getJson(url), await getJson(url), await getJson(url)];
      expect(res.map((r) => r.status)).toEqual([200, 200, 429]);
      expect(res[2]!.headers.get('retry-after')).toBeNull();
      const stats = limited.control.stats();
      expect(stats.rateLimited).toBe(1);
      expect(stats.byEndpoint['GET /organizations/:org/users']).toEqual({ '200': 2, '429': 1 });
      expect(Object.values(stats.perTokenMinute[limited.token]!).reduce((a, b) => a + b, 0)).toBe(3);
    } finally {
      await limited.close();
    }
  });

  it('can be switched over HTTP', async () => {
    const set = await sendJson(`${sb.controlUrl}/faults`, 'POST', { rate5xx: 1 });
    expect(set.body.rate5xx).toBe(1);
    expect((await getJson(usersUrl())).status).toBe(503);
    await sendJson(`${sb.controlUrl}/faults`, 'POST', { reset: true });
    expect((await getJson(`${sb.controlUrl}/faults`)).body.rate5xx).toBe(0);
    expect((await getJson(usersUrl())).status).toBe(200);
  });
});

describe('stream faults', () => {
  it('drops a stream connection after every K data events', async () => {
    // Redelivery after a reconnect is off unless asked for (nothing promises a number of events).
    sb.control.setFaults({ streamDropEvery: 2, redeliverCount: 3 });
    const id = await newStream();
    const c = await connect(id);
    const ids = [0, 1, 2].map(() => sb.control.addRecord({ uid: uid(), type: 'measurement' }).id);
    expect((await c.nextData<{ id: string }>()).id).toBe(ids[0]);
    expect((await c.nextData<{ id: string }>()).id).toBe(ids[1]);
    await c.ended;
    await expect(c.nextData()).rejects.toThrow('connection ended');
    await vi.waitFor(() => expect(sb.truth.streams().find((s) => s.id === id)?.members).toBe(0));
    sb.control.resetFaults();
    sb.control.setFaults({ redeliverCount: 3 });
    // Reconnecting redelivers the last events and continues.
    const again = await connect(id);
    const got = [0, 1, 2].map(() => again.nextData<{ id: string }>());
    expect((await Promise.all(got)).map((r) => r.id)).toEqual(ids);
  });

  it('goes silent: the connection stays open without data or pokes', async () => {
    const id = await newStream();
    const c = await connect(id);
    expect((await c.next()).event).toBe('poke');
    sb.control.setFaults({ silentStream: true });
    const cursor = sb.truth.streams().find((s) => s.id === id)!.cursor;
    const record = sb.control.addRecord({ uid: uid(), type: 'measurement' });
    expect(sb.truth.streams().find((s) => s.id === id)!.cursor).toBe(cursor);
    // A negative check needs a bound: ten poke intervals pass with no frame at all.
    const before = c.received();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(c.received()).toBe(before);
    sb.control.setFaults({ silentStream: false });
    sb.control.addRecord({ uid: uid(), type: 'measurement' });
    expect((await c.nextData<{ id: string }>()).id).toBe(record.id);
  });

  it('answers 422 to the first N reconnects inside the rebalancing window', async () => {
    sb.control.setFaults({ reconnectStorm: { rejections: 2, windowMs: 60_000 } });
    const id = await newStream();
    const c = await connect(id);
    c.close();
    await vi.waitFor(() => expect(sb.truth.streams().find((s) => s.id === id)?.members).toBe(0));
    const first = await connect(id);
    const second = await connect(id);
    expect([first.status, second.status]).toEqual([422, 422]);
    expect(JSON.parse(first.text)).toEqual({ message: expect.any(String) });
    expect((await connect(id)).status).toBe(200);
  });

  it('sends frames with other event names when asked', async () => {
    sb.control.setFaults({ unknownEventRate: 1 });
    const id = await newStream();
    const c = await connect(id);
    const record = sb.control.addRecord({ uid: uid(), type: 'summary' });
    expect((await c.nextData<{ id: string }>()).id).toBe(record.id);
    expect(c.skipped.some((f) => f.event === 'rule' || f.event === 'connection')).toBe(true);
  });
});

describe('legacy faults', () => {
  const org = () => `${sb.legacyUrl}/v1/organizations/${sb.legacyOrgId}`;
  const window = 'start_date=2026-02-01T00:00:00Z&end_date=2026-03-16T00:00:00Z';

  it('wraps next back to the first page after the last page', async () => {
    sb.control.setFaults({ legacyNextWraps: true });
    const total = (await getJson(`${org()}/routine.json?access_token=${sb.legacyToken}&${window}`)).body
      .summary.results;
    const last = await getJson(
      `${org()}/routine.json?access_token=${sb.legacyToken}&${window}&limit=50&offset=${total - 10}`,
    );
    expect(last.body.routine).toHaveLength(10);
    expect(last.body.summary.next).toContain('offset=0');
  });

  it('caps limit at 200 on latest endpoints only', async () => {
    sb.control.setFaults({ latestLimitCap: 200 });
    const latest = await getJson(
      `${org()}/routine/latest.json?access_token=${sb.legacyToken}&${window}&limit=1000`,
    );
    expect(latest.body.summary.limit).toBe(200);
    expect(latest.body.routine.length).toBeLessThanOrEqual(200);
    const list = await getJson(`${org()}/routine.json?access_token=${sb.legacyToken}&${window}&limit=1000`);
    expect(list.body.summary.limit).toBe(1000);
  });

  /** Follows `next` links from the first page; the ids read and the links followed. */
  async function follow(first: string) {
    const ids: string[] = [];
    const links: URL[] = [];
    let url: string | null = first;
    while (url && links.length < 100) {
      const res = await getJson(url);
      ids.push(...res.body.routine.map((r: { _id: string }) => r._id));
      url = res.body.summary.next;
      if (url) links.push(new URL(url));
    }
    return { ids, links };
  }
  const routine = () => `${org()}/routine.json?access_token=${sb.legacyToken}&${window}&limit=10`;

  it('pages by page alone: offset is ignored, links carry page', async () => {
    sb.control.setFaults({ legacyPaging: 'page' }, { reset: true });
    const total = (await getJson(routine())).body.summary.results;
    expect(total).toBeGreaterThan(20);
    const second = await getJson(`${routine()}&page=2`);
    expect((await getJson(`${routine()}&offset=10`)).body.routine).toEqual(
      (await getJson(routine())).body.routine,
    );
    expect(second.body.summary.offset).toBe(10);
    const { ids, links } = await follow(routine());
    expect(new Set(ids).size).toBe(total);
    expect(links.every((u) => u.searchParams.has('page') && !u.searchParams.has('offset'))).toBe(true);
  });

  it('pages by page and offset together: links carry both', async () => {
    sb.control.setFaults({ legacyPaging: 'page-and-offset' }, { reset: true });
    const total = (await getJson(routine())).body.summary.results;
    const skipped = await getJson(`${routine()}&offset=5&page=2`);
    expect(skipped.body.summary.offset).toBe(15);
    expect(new URL(skipped.body.summary.next).searchParams.get('page')).toBe('3');
    expect(new URL(skipped.body.summary.next).searchParams.get('offset')).toBe('5');
    const { ids, links } = await follow(routine());
    expect(new Set(ids).size).toBe(total);
    expect(links.every((u) => u.searchParams.get('offset') === '0' && u.searchParams.has('page'))).toBe(true);
  });

  it.each(['empty-page', 'next-null'] as const)(
    'cuts a listing short (%s) while results counts it all',
    async (style) => {
      sb.control.setFaults(
        { legacyListingCutShort: { after: 15, style, objects: ['routine'] } },
        { reset: true },
      );
      const total = (await getJson(routine())).body.summary.results;
      expect(total).toBeGreaterThan(20);
      const { ids, links } = await follow(routine());
      expect(ids).toHaveLength(15);
      // empty-page: the links go on past the cut (pages 3.. are empty); next-null: they end at it.
      expect(links).toHaveLength(style === 'empty-page' ? Math.ceil(total / 10) - 1 : 1);
      // Other objects, and lists short enough, are not cut.
      const fitness = await getJson(
        `${org()}/fitness.json?access_token=${sb.legacyToken}&${window}&limit=1000`,
      );
      expect(fitness.body.fitness).toHaveLength(fitness.body.summary.results);
      sb.control.resetFaults();
    },
  );
});

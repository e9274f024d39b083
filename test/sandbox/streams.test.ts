import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { useBeforeAll } from '../helpers/use-before-all.ts';
import { ANCHOR, getJson, sendJson, startTestSandbox } from './fixtures.ts';
import { openSse, type SseConnection } from './sse-client.ts';

const sb = useBeforeAll(startTestSandbox, (sandbox) => sandbox.close());
const open: SseConnection[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) c.close();
  // Leave no stream behind: each test starts below the 5-stream limit.
  await vi.waitFor(() => expect(sb.truth.streams().every((s) => s.members === 0)).toBe(true));
  const list = await getJson(`${sb.streamsUrl}/streams?token=${sb.token}`);
  for (const s of list.body.streams)
    await getJson(`${sb.streamsUrl}/streams/${s.id}?token=${sb.token}`, { method: 'DELETE' });
});

const streamsUrl = () => `${sb.streamsUrl}/streams?token=${sb.token}`;
const createStream = async (body: Record<string, unknown> = {}) => {
  const res = await sendJson(streamsUrl(), 'POST', { name: 'test', ...body });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
};
const connect = async (id: string) => {
  const c = await openSse(`${sb.streamsUrl}/streams/${id}/connect?token=${sb.token}`);
  if (c.status === 200) open.push(c);
  return c;
};
const uid = () => sb.truth.users()[0]!.uid;

describe('stream management', () => {
  it('creates, lists newest first, gets, renames and deletes streams', async () => {
    const a = await createStream({ name: 'a', resource_filter: ['measurement'] });
    const b = await createStream({ name: 'b' });
    expect(a).toMatchObject({
      name: 'a',
      resource_filter: ['measurement'],
      members: 0,
      group: expect.any(String),
    });
    const list = await getJson(streamsUrl());
    expect(list.body.streams.map((s: { id: string }) => s.id)).toEqual([b.id, a.id]);
    expect((await getJson(`${sb.streamsUrl}/streams/${a.id}?token=${sb.token}`)).body.name).toBe('a');
    const renamed = await sendJson(`${sb.streamsUrl}/streams/${a.id}?token=${sb.token}`, 'PUT', {
      name: 'renamed',
    });
    expect(renamed.body.name).toBe('renamed');
    expect(
      (await getJson(`${sb.streamsUrl}/streams/${a.id}?token=${sb.token}`, { method: 'DELETE' })).status,
    ).toBe(200);
    expect((await getJson(`${sb.streamsUrl}/streams/${a.id}?token=${sb.token}`)).status).toBe(404);
  });

  it('refuses a sixth stream with 422 and a message', async () => {
    for (let i = 0; i < 5; i++) await createStream({ name: `s${i}` });
    const sixth = await sendJson(streamsUrl(), 'POST', { name: 'sixth' });
    expect(sixth.status).toBe(422);
    expect(sixth.body).toEqual({ message: expect.any(String) });
  });

  it('answers 422 with a message when a name is missing', async () => {
    const created = await sendJson(streamsUrl(), 'POST', {});
    expect(created.status).toBe(422);
    expect(created.body).toEqual({ message: expect.any(String) });
    const s = await createStream();
    const renamed = await sendJson(`${sb.streamsUrl}/streams/${s.id}?token=${sb.token}`, 'PUT', {});
    expect(renamed.status).toBe(422);
  });

  it('answers 403 for an unknown token and 404 for an unknown stream', async () => {
    expect((await getJson(`${sb.streamsUrl}/streams?token=bad`)).body).toEqual({
      message: 'Invalid authentication credentials',
    });
    expect((await getJson(`${sb.streamsUrl}/streams/nope?token=${sb.token}`)).status).toBe(404);
    expect((await openSse(`${sb.streamsUrl}/streams/nope/connect?token=${sb.token}`)).status).toBe(404);
  });

  it('refuses to delete a stream with connected clients (409)', async () => {
    const s = await createStream();
    await connect(s.id);
    const res = await getJson(`${sb.streamsUrl}/streams/${s.id}?token=${sb.token}`, { method: 'DELETE' });
    expect(res.status).toBe(409);
    expect(res.body.message).toEqual(expect.any(String));
  });
});

describe('stream delivery', () => {
  it('sends event: data frames with new records and pokes when idle', async () => {
    const s = await createStream();
    const c = await connect(s.id);
    expect(c.status).toBe(200);
    expect(c.headers['content-type']).toContain('text/event-stream');
    const poke = await c.next();
    expect(poke.event).toBe('poke');
    expect(JSON.parse(poke.data)).toEqual({
      ts: expect.any(String),
      stream: s.id,
      members: { count: 1, max: 3 },
    });
    const record = sb.control.addRecord({ uid: uid(), type: 'measurement' });
    const got = await c.nextData<{ id: string; checksum: string }>();
    expect(got).toMatchObject({ id: record.id, checksum: record.checksum });
  });

  it('delivers updates, deletions and connection events', async () => {
    const s = await createStream();
    const c = await connect(s.id);
    const record = sb.control.addRecord({ uid: uid(), type: 'workout' });
    const updated = sb.control.updateRecord(record.id);
    const deleted = sb.control.deleteRecord(record.id);
    const event = sb.control.disconnectSource(uid(), 'fitbit');
    const a = await c.nextData<{ checksum: string; created_at: string }>();
    const b = await c.nextData<{ checksum: string; created_at: string }>();
    const d = await c.nextData<{ checksum: string; deleted_at: string | null }>();
    const e = await c.nextData<{ id: string; action: string }>();
    expect(a.checksum).toBe(record.checksum);
    expect(b.checksum).toBe(updated.checksum);
    expect(b.checksum).not.toBe(a.checksum);
    expect(b.created_at > a.created_at).toBe(true);
    expect(d.checksum).toBe(deleted.checksum);
    expect(d.deleted_at).toEqual(expect.any(String));
    expect(e).toMatchObject({ id: event.id, action: 'delete' });
  });

  it('applies resource_filter', async () => {
    const s = await createStream({ resource_filter: ['sleep'] });
    const c = await connect(s.id);
    sb.control.addRecord({ uid: uid(), type: 'measurement' });
    const sleep = sb.control.addRecord({ uid: uid(), type: 'sleep' });
    expect((await c.nextData<{ id: string }>()).id).toBe(sleep.id);
  });

  it('starts a stream with start_date at that point of the event log', async () => {
    const s = await createStream({ start_date: '2026-03-14' });
    const c = await connect(s.id);
    const first = await c.nextData<{ created_at: string }>();
    expect(first.created_at >= '2026-03-14').toBe(true);
    const expectedFirst = sb.truth.events().find((e) => e.created_at >= '2026-03-14')!;
    expect(first).toEqual(expectedFirst.payload);
  });

  it('distributes events across up to 3 members and refuses a 4th with 422', async () => {
    const s = await createStream();
    const members = [await connect(s.id), await connect(s.id), await connect(s.id)];
    const fourth = await connect(s.id);
    expect(fourth.status).toBe(422);
    expect(JSON.parse(fourth.text)).toEqual({ message: expect.any(String) });
    const added = Array.from({ length: 6 }, () => sb.control.addRecord({ uid: uid(), type: 'summary' }).id);
    const received: string[][] = [[], [], []];
    await Promise.all(
      members.map(async (m, i) => {
        for (let n = 0; n < 2; n++) received[i]!.push((await m.nextData<{ id: string }>()).id);
      }),
    );
    expect(received.flat().sort()).toEqual([...added].sort());
    for (const r of received) expect(r).toHaveLength(2);
    // Pokes report the member count.
    const poke = members[0]!.skipped.find((f) => f.event === 'poke') ?? (await members[0]!.next());
    expect(JSON.parse(poke.data).members.max).toBe(3);
  });

  it('resumes from the checkpoint after a reconnect and redelivers the last events', async () => {
    // Redelivery is off unless asked for: nothing promises a number of re-sent events.
    sb.control.setFaults({ redeliverCount: 3 });
    onTestFinished(() => {
      sb.control.resetFaults();
    });
    const s = await createStream();
    const first = await connect(s.id);
    const ids = Array.from({ length: 5 }, () => sb.control.addRecord({ uid: uid(), type: 'nutrition' }).id);
    for (const id of ids) expect((await first.nextData<{ id: string }>()).id).toBe(id);
    first.close();
    await vi.waitFor(() => expect(sb.truth.streams().find((x) => x.id === s.id)?.members).toBe(0));
    // Created while nobody is connected: kept for the stream.
    const later = Array.from({ length: 2 }, () => sb.control.addRecord({ uid: uid(), type: 'nutrition' }).id);
    const second = await connect(s.id);
    const got: string[] = [];
    for (let i = 0; i < 5; i++) got.push((await second.nextData<{ id: string }>()).id);
    // At least once: the last 3 delivered events come again, then the backlog in order.
    expect(got).toEqual([...ids.slice(2), ...later]);
  });

  it('forgets a checkpoint 7 days after the last disconnect', async () => {
    const s = await createStream();
    const first = await connect(s.id);
    sb.control.addRecord({ uid: uid(), type: 'sleep' });
    await first.nextData();
    first.close();
    await vi.waitFor(() => expect(sb.truth.streams().find((x) => x.id === s.id)?.members).toBe(0));
    sb.control.addRecord({ uid: uid(), type: 'sleep' });
    sb.control.advanceClock(8 * 86_400_000);
    const second = await connect(s.id);
    const fresh = sb.control.addRecord({ uid: uid(), type: 'sleep' });
    expect((await second.nextData<{ id: string }>()).id).toBe(fresh.id);
    sb.control.advanceClock(-8 * 86_400_000);
  });

  it('consumes nothing while no member is connected', async () => {
    const s = await createStream();
    const before = sb.truth.streams().find((x) => x.id === s.id)!.cursor;
    sb.control.addRecord({ uid: uid(), type: 'cgm' });
    expect(sb.truth.streams().find((x) => x.id === s.id)!.cursor).toBe(before);
  });
});

describe("a new stream's start (the spec does not say where it begins)", () => {
  const startOfDay = useBeforeAll(
    () => startTestSandbox({ newStreamStart: 'start-of-day' }),
    (sandbox) => sandbox.close(),
  );

  it('begins at its creation by default: only what is created from then on', async () => {
    const s = await createStream();
    const c = await connect(s.id);
    const fresh = sb.control.addRecord({ uid: uid(), type: 'measurement' });
    expect((await c.nextData<{ id: string }>()).id).toBe(fresh.id);
  });

  it("with newStreamStart 'start-of-day', at the first event created on its creation's UTC day", async () => {
    const url = `${startOfDay.streamsUrl}/streams?token=${startOfDay.token}`;
    const created = await sendJson(url, 'POST', { name: 'midnight' });
    expect(created.status).toBe(201);
    const c = await openSse(
      `${startOfDay.streamsUrl}/streams/${created.body.id}/connect?token=${startOfDay.token}`,
    );
    try {
      const midnight = `${ANCHOR.toISOString().slice(0, 10)}T00:00:00`;
      const today = startOfDay.truth.events().filter((e) => e.created_at >= midnight);
      expect(today.length).toBeGreaterThan(1);
      // The day's backlog, in log order, from its first event: created before the stream, after midnight.
      for (const expected of today.slice(0, 2)) expect(await c.nextData()).toEqual(expected.payload);
      // An explicit start_date still wins.
      const dated = await sendJson(url, 'POST', { name: 'dated', start_date: '2026-03-14' });
      const d = await openSse(
        `${startOfDay.streamsUrl}/streams/${dated.body.id}/connect?token=${startOfDay.token}`,
      );
      try {
        const first = await d.nextData<{ created_at: string }>();
        expect(first.created_at < midnight && first.created_at >= '2026-03-14').toBe(true);
      } finally {
        d.close();
      }
    } finally {
      c.close();
    }
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { startTestSandbox } from './fixtures.ts';
import { openSse, type SseConnection } from './sse-client.ts';

let sb: Sandbox;
const open: SseConnection[] = [];
beforeAll(async () => {
  sb = await startTestSandbox();
});
afterAll(() => sb.close());
afterEach(() => {
  for (const c of open.splice(0)) c.close();
  sb.control.resetFaults();
});

const replay = async (q: string, token = sb.token) => {
  const c = await openSse(`${sb.streamsUrl}/replay?token=${token}${q}`);
  if (c.status === 200) open.push(c);
  return c;
};

describe('replay', () => {
  it('replays every event created on or after the date, in log order, then idles with pokes', async () => {
    const expected = sb.truth.events().filter((e) => e.created_at >= '2026-03-10');
    const c = await replay('&date=2026-03-10');
    expect(c.headers['content-type']).toContain('text/event-stream');
    for (const e of expected) expect(await c.nextData()).toEqual(e.payload);
    const poke = await c.next();
    expect(poke.event).toBe('poke');
    expect(JSON.parse(poke.data)).toMatchObject({ stream: 'replay', members: { count: 1, max: 1 } });
  });

  it('keeps forwarding new events after catching up', async () => {
    const c = await replay('&date=2026-03-15');
    const backlog = sb.truth.events().filter((e) => e.created_at >= '2026-03-15').length;
    for (let i = 0; i < backlog; i++) await c.nextData();
    const record = sb.control.addRecord({ uid: sb.truth.users()[1]!.uid, type: 'measurement' });
    expect((await c.nextData<{ id: string }>()).id).toBe(record.id);
  });

  it('filters by resources (singular or plural names, connection for connection events)', async () => {
    const expected = sb.truth
      .events()
      .filter((e) => e.created_at >= '2026-03-01' && (e.kind === 'sleep' || e.kind === 'connection'));
    const c = await replay('&date=2026-03-01&resources=sleep,connections');
    for (const e of expected) expect(await c.nextData()).toEqual(e.payload);
    expect((await c.next()).event).toBe('poke');
  });

  it('answers 400 for a missing or bad date, more than 30 days back, or before 2025-07-01', async () => {
    for (const q of ['', '&date=2026-3-1', '&date=2026-02-01', '&date=2025-06-30']) {
      const c = await replay(q);
      expect(c.status).toBe(400);
      expect(c.headers['content-type']).toContain('text/plain');
    }
    const early = await startTestSandbox({ now: new Date('2025-07-10T00:00:00Z'), users: 2 });
    try {
      const c = await openSse(`${early.streamsUrl}/replay?token=${early.token}&date=2025-06-20`);
      expect(c.status).toBe(400);
      expect(c.text).toContain('2025-07-01');
    } finally {
      await early.close();
    }
  });

  it('answers 403 for an unknown token', async () => {
    const c = await replay('&date=2026-03-10', 'bad');
    expect(c.status).toBe(403);
    expect(JSON.parse(c.text)).toEqual({ message: 'Invalid authentication credentials' });
  });

  it('replays changed records in order (older version first), and with the fault repeats the older one after', async () => {
    const record = sb.control.addRecord({ uid: sb.truth.users()[0]!.uid, type: 'nutrition' });
    const updated = sb.control.updateRecord(record.id);
    const today = sb.control.now().slice(0, 10);
    sb.control.setFaults({ replayOlderVersions: true });
    const c = await replay(`&date=${today}`);
    const seen: { id: string; checksum: string }[] = [];
    for (;;) {
      const r = await c.nextData<{ id: string; checksum: string }>();
      if (r.id === record.id) seen.push(r);
      if (seen.length === 3) break;
    }
    expect(seen.map((r) => r.checksum)).toEqual([record.checksum, updated.checksum, record.checksum]);
  });
});

import { describe, expect, it } from 'vitest';
import { PermanentError, UserFacingError } from '../../src/errors/index.ts';
import { createHttpClient } from '../../src/http/http-client.ts';
import { createStreamsClient } from '../../src/validic/streams-client.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://streams.example.test';
const mock = useMockAgent(ORIGIN);

/** A tiny in-memory streams service with the 5-stream limit; `refuse` answers every create instead. */
function serveStreams(
  initial: Array<{ id: string; name: string }>,
  limitStatus = 422,
  refuse?: { status: number; body: unknown },
) {
  const streams = [...initial];
  let next = 100;
  for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
    mock.serve(
      ({ url, body }) => {
        const [, , id, action] = url.pathname.split('/');
        if (method === 'GET' && !id) return { body: { streams } };
        if (method === 'POST') {
          if (refuse) return refuse;
          if (streams.length >= 5) return { status: limitStatus, body: { message: 'too many' } };
          const asked = body as { name: string; resource_filter?: string[] };
          const created = {
            id: `s${next++}`,
            name: asked.name,
            resource_filter: asked.resource_filter ?? [],
          };
          streams.unshift(created);
          return { status: 201, body: created };
        }
        const found = streams.find((s) => s.id === id);
        if (!found || action) return { status: 404, body: { message: 'not found' } };
        if (method === 'PUT') found.name = (body as { name: string }).name;
        if (method === 'DELETE') {
          streams.splice(streams.indexOf(found), 1);
          return { status: 204, body: '' };
        }
        return { body: found };
      },
      { method },
    );
  }
  return streams;
}

const client = () =>
  createStreamsClient({
    http: mock.http(),
    streamsUrl: `${ORIGIN}/`,
    token: 'stream-tok',
  });

describe('streams client', () => {
  it('lists, creates, gets, renames and deletes', async () => {
    const store = serveStreams([{ id: 's1', name: 'old' }]);
    const c = client();
    expect((await c.listStreams()).map((s) => s.id)).toEqual(['s1']);
    const created = await c.createStream({ name: 'warehouse', resource_filter: ['measurement'] });
    expect(created).toMatchObject({ id: 's100', name: 'warehouse', resource_filter: ['measurement'] });
    expect(mock.requests.at(-1)).toMatchObject({
      method: 'POST',
      body: { name: 'warehouse', resource_filter: ['measurement'] },
    });
    expect((await c.getStream('s1')).name).toBe('old');
    expect((await c.renameStream('s1', 'renamed')).name).toBe('renamed');
    await c.deleteStream('s1');
    await c.deleteStream('s1'); // already gone: fine
    expect(store.map((s) => s.id)).toEqual(['s100']);
    expect(mock.requests.every((call) => call.url.searchParams.get('token') === 'stream-tok')).toBe(true);
    await expect(c.getStream('missing')).rejects.toBeInstanceOf(PermanentError);
  });

  it('findOrCreateStream reuses a stream by name, else creates it', async () => {
    serveStreams([{ id: 's1', name: 'warehouse' }]);
    const c = client();
    expect((await c.findOrCreateStream({ name: 'warehouse' })).id).toBe('s1');
    expect(mock.requests.filter((call) => call.method === 'POST')).toHaveLength(0);
    const made = await c.findOrCreateStream({ name: 'other', resources: ['nutrition'] });
    expect(made.id).toBe('s100');
    expect(mock.requests.at(-1)!.body).toEqual({ name: 'other', resource_filter: ['nutrition'] });
  });

  for (const status of [422, 400]) {
    it(`turns the 5-stream limit (${status}) into a UserFacingError naming the fix`, async () => {
      serveStreams(
        Array.from({ length: 5 }, (_, i) => ({ id: `s${i}`, name: `n${i}` })),
        status,
      );
      const err = await client()
        .createStream({ name: 'sixth' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UserFacingError);
      expect((err as UserFacingError).fix).toMatch(/delete an unused stream/);
      expect((err as UserFacingError).fix).toMatch(/existing/);
      expect((err as Error).message).not.toContain('stream-tok');
    });
  }

  const refusals = [
    {
      body: { message: 'Maximum number of streams (5) reached for this organization' },
      existing: 1,
      message: /at most 5 streams per customer.*Maximum number of streams/,
      fix: /delete an unused stream/,
    },
    {
      body: { message: 'unknown resource in resource_filter: steps' },
      existing: 1,
      message: /refused the stream's filter.*unknown resource in resource_filter: steps/,
      fix: /stream\.resources.*measurement, nutrition, intraday, summary, workout, sleep, cgm, connection/,
    },
    {
      body: { errors: ['max client connections exceeded'] },
      existing: 1,
      message: /as many client connections as the platform allows.*max client connections exceeded/,
      fix: /stream\.connections/,
    },
    {
      body: { errors: { start_date: ['must be YYYY-MM-DD'] } },
      existing: 1,
      message: /answered 422.*must be YYYY-MM-DD/,
      fix: /check the stream settings/,
    },
    // A body that names nothing, with 5 streams there: the count confirms the stream limit.
    { body: {}, existing: 5, message: /at most 5 streams.*no message in the body/, fix: /delete an unused/ },
  ];
  for (const { body, existing, message, fix } of refusals) {
    it(`reports a 422 by its body: ${JSON.stringify(body)}`, async () => {
      serveStreams(
        Array.from({ length: existing }, (_, i) => ({ id: `s${i}`, name: `n${i}` })),
        422,
        { status: 422, body },
      );
      const err = await client()
        .createStream({ name: 'mine', resource_filter: ['steps'] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UserFacingError);
      expect((err as Error).message).toMatch(message);
      expect((err as UserFacingError).fix).toMatch(fix);
      // Only a stream-limit refusal speaks of the stream limit.
      if (!fix.source.includes('delete')) expect((err as Error).message).not.toMatch(/5 streams/);
    });
  }

  it('builds connect and replay URLs', () => {
    const c = createStreamsClient({
      http: createHttpClient({ dispatcher: mock.agent }),
      streamsUrl: 'http://127.0.0.1:9/sse',
      token: 't',
    });
    expect(c.connectUrl('a b').href).toBe('http://127.0.0.1:9/sse/streams/a%20b/connect?token=t');
    expect(c.replayUrl({ date: '2026-01-05', resources: ['measurement', 'nutrition'] }).href).toBe(
      'http://127.0.0.1:9/sse/replay?date=2026-01-05&resources=measurement%2Cnutrition&token=t',
    );
    expect(c.replayUrl({ date: '2026-01-05' }).searchParams.has('resources')).toBe(false);
  });
});

describe('findOrCreateStream when the create answer is lost', () => {
  it('finds the stream the lost POST created instead of failing', async () => {
    const streams: Array<{ id: string; name: string }> = [];
    const pool = mock.agent.get(ORIGIN);
    pool
      .intercept({ path: (p) => p.startsWith('/streams?'), method: 'GET' })
      .reply(() => ({ statusCode: 200, data: JSON.stringify({ streams }) }))
      .persist();
    pool.intercept({ path: (p) => p.startsWith('/streams?'), method: 'POST' }).reply(() => {
      streams.push({ id: 's9', name: 'warehouse' });
      return { statusCode: 201, data: '{"id":"s9","na' };
    });
    const found = await client().findOrCreateStream({ name: 'warehouse' });
    expect(found.id).toBe('s9');
  });
});

import { describe, expect, it } from 'vitest';
import { HttpError } from '../../src/errors/index.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://streams.example.test';
const mock = useMockAgent(ORIGIN);

describe('writes and retries', () => {
  it('does not repeat a POST the server may have acted on (5xx)', async () => {
    mock.agent.get(ORIGIN).intercept({ path: '/streams?token=t', method: 'POST' }).reply(502, 'bad gateway');
    const clock = createManualClock();
    const http = mock.http({ clock });
    const err = await http
      .sendJson('POST', `${ORIGIN}/streams?token=t`, { name: 'x' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(502);
    expect(clock.sleeps).toEqual([]);
  });

  it('repeats a POST after 429 and after a refused connection', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool
      .intercept({ path: '/streams?token=t', method: 'POST' })
      .reply(429, '', { headers: { 'retry-after': '1' } });
    pool
      .intercept({ path: '/streams?token=t', method: 'POST' })
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    pool.intercept({ path: '/streams?token=t', method: 'POST' }).reply(201, { id: 's1', name: 'x' });
    const clock = createManualClock();
    const http = mock.http({ clock, backoff: { random: () => 0.5 } });
    await expect(http.sendJson('POST', `${ORIGIN}/streams?token=t`, { name: 'x' })).resolves.toEqual({
      id: 's1',
      name: 'x',
    });
    expect(clock.sleeps).toEqual([1000, 500]);
  });

  it('retries PUT and DELETE like GET', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: '/streams/s1?token=t', method: 'PUT' }).reply(503, '');
    pool.intercept({ path: '/streams/s1?token=t', method: 'PUT' }).reply(200, { id: 's1', name: 'y' });
    const http = mock.http();
    await expect(http.sendJson('PUT', `${ORIGIN}/streams/s1?token=t`, { name: 'y' })).resolves.toEqual({
      id: 's1',
      name: 'y',
    });
  });

  it('aborts an in-flight request', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: '/slow', method: 'GET' })
      .reply(200, { late: true })
      .delay(60_000);
    const http = mock.http();
    const controller = new AbortController();
    const pending = http.getJson(`${ORIGIN}/slow`, { signal: controller.signal });
    controller.abort(new Error('shutdown'));
    await expect(pending).rejects.toThrow('shutdown');
  });
});

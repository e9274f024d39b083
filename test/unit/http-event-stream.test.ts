import { describe, expect, it } from 'vitest';
import { createBudgetRegistry } from '../../src/budget/request-budget.ts';
import {
  HttpError,
  PermanentError,
  RateLimitedError,
  StreamRebalancingError,
} from '../../src/errors/index.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://streams.example.test';
const CONNECT = `${ORIGIN}/streams/s1/connect?token=sse-token-1`;

const mock = useMockAgent(ORIGIN);

describe('openEventStream', () => {
  it('returns status, headers and the raw body as an async iterable', async () => {
    const frames = 'event: poke\ndata: {"ts":"2026-01-01T00:00:00Z"}\n\nevent: data\ndata: {"id":"r1"}\n\n';
    mock.agent
      .get(ORIGIN)
      .intercept({
        path: '/streams/s1/connect?token=sse-token-1',
        method: 'GET',
        headers: { accept: 'text/event-stream' },
      })
      .reply(200, frames, { headers: { 'content-type': 'text/event-stream' } });
    const http = mock.http();
    const stream = await http.openEventStream(CONNECT);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    let text = '';
    for await (const chunk of stream.body) text += Buffer.from(chunk).toString('utf8');
    expect(text).toBe(frames);
  });

  it('surfaces 422 as StreamRebalancingError (retryable), without retrying inside', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: () => true, method: 'GET' })
      .reply(422, { message: 'max client connections exceeded' });
    const clock = createManualClock();
    const http = mock.http({ clock });
    const err = await http.openEventStream(CONNECT).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamRebalancingError);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).retryable).toBe(true);
    expect((err as HttpError).messages).toEqual(['max client connections exceeded']);
    expect((err as Error).message).not.toContain('sse-token-1');
    expect(clock.sleeps).toEqual([]);
  });

  it('types 429, 5xx and other 4xx', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: () => true, method: 'GET' }).reply(429, '', { headers: { 'retry-after': '2' } });
    pool.intercept({ path: () => true, method: 'GET' }).reply(503, 'down');
    pool.intercept({ path: () => true, method: 'GET' }).reply(404, { message: 'stream not found' });
    const http = mock.http();
    const e1 = await http.openEventStream(CONNECT).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(RateLimitedError);
    expect((e1 as RateLimitedError).retryAfterMs).toBe(2000);
    const e2 = await http.openEventStream(CONNECT).catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(HttpError);
    expect((e2 as HttpError).status).toBe(503);
    const e3 = await http.openEventStream(CONNECT).catch((e: unknown) => e);
    expect(e3).toBeInstanceOf(PermanentError);
  });

  it('takes a budget token per connect', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: () => true, method: 'GET' })
      .reply(200, '')
      .times(3);
    const clock = createManualClock();
    const budgets = createBudgetRegistry({ rate: { limit: 3600, capacity: 2, utilization: 1 }, clock });
    const http = mock.http({ clock, budgets });
    for (let i = 0; i < 3; i++) {
      const s = await http.openEventStream(CONNECT, { budgetKey: 'sse-token-1' });
      s.close();
    }
    // Two tokens of burst, then the third connect waited for a refill (1 token per ~1.0 s).
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeGreaterThan(900);
  });
});

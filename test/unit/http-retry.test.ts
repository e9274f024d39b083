import { beforeEach, describe, expect, it } from 'vitest';
import { HttpError, NetworkError, RateLimitedError, ResponseBodyError } from '../../src/errors/index.ts';
import type { RequestEvent } from '../../src/http/http-client-types.ts';
import { createManualClock, type ManualClock } from '../../src/time/manual-clock.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const URL_ = `${ORIGIN}/organizations/o1/users?token=secret-token-123&limit=2&offset=0`;
const isUsers = (path: string) => path.startsWith('/organizations/o1/users');

const mock = useMockAgent(ORIGIN);
let clock: ManualClock;
let events: RequestEvent[];

beforeEach(() => {
  clock = createManualClock();
  events = [];
});

function client(maxAttempts = 6) {
  return mock.http({
    clock,
    maxAttempts,
    backoff: { baseMs: 1000, capMs: 8000, random: () => 0.5 },
    onRequest: (e) => events.push(e),
  });
}

describe('http retries', () => {
  it('honours Retry-After in seconds on 429, then succeeds', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool
      .intercept({ path: isUsers, method: 'GET' })
      .reply(429, 'slow down', { headers: { 'retry-after': '7' } });
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [{ uid: 'a' }] });
    const body = await client().getJson<{ data: unknown[] }>(URL_);
    expect(body.data).toHaveLength(1);
    expect(clock.sleeps).toEqual([7000]);
    expect(events.map((e) => [e.status, e.attempt])).toEqual([
      [429, 1],
      [200, 2],
    ]);
    expect(events[0]!.host).toBe('api.example.test');
  });

  it('honours Retry-After as an HTTP date', async () => {
    const pool = mock.agent.get(ORIGIN);
    const at = new Date(clock.now() + 12_000).toUTCString();
    pool.intercept({ path: isUsers, method: 'GET' }).reply(429, '', { headers: { 'retry-after': at } });
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [] });
    await client().getJson(URL_);
    expect(clock.sleeps).toEqual([12_000]);
  });

  it('backs off exponentially (full jitter, capped) on 429 without Retry-After and on 5xx', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: isUsers, method: 'GET' }).reply(429, '');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(500, 'oops');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(502, 'bad gateway');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(503, '');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(504, '');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [] });
    await client().getJson(URL_);
    // random() = 0.5 of min(cap 8000, 1000·2^(n-1)).
    expect(clock.sleeps).toEqual([500, 1000, 2000, 4000, 4000]);
  });

  it('gives up after maxAttempts and throws the last error', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: isUsers, method: 'GET' }).reply(500, 'first').times(2);
    pool.intercept({ path: isUsers, method: 'GET' }).reply(503, '{"message":"still down"}');
    const err = await client(3)
      .getJson(URL_)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(503);
    expect((err as HttpError).retryable).toBe(true);
    expect((err as HttpError).messages).toEqual(['still down']);
    expect(events).toHaveLength(3);
  });

  it('throws RateLimitedError after the last 429', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: isUsers, method: 'GET' })
      .reply(429, '', { headers: { 'retry-after': '3' } })
      .times(2);
    const err = await client(2)
      .getJson(URL_)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBe(3000);
  });

  it('throws a long Retry-After at once so the queue can reschedule', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: isUsers, method: 'GET' })
      .reply(429, '', { headers: { 'retry-after': '3600' } });
    const err = await client()
      .getJson(URL_)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBe(3_600_000);
    expect(clock.sleeps).toEqual([]);
  });

  it('retries connection resets and wraps the last one in a NetworkError', async () => {
    const reset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: isUsers, method: 'GET' }).replyWithError(reset());
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [{ uid: 'b' }] });
    await expect(client().getJson(URL_)).resolves.toEqual({ data: [{ uid: 'b' }] });
    expect(events[0]).toMatchObject({ status: 0, attempt: 1 });

    pool.intercept({ path: isUsers, method: 'GET' }).replyWithError(reset()).times(2);
    const err = await client(2)
      .getJson(URL_)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).message).not.toContain('secret-token-123');
    expect((err as NetworkError).message).toContain('token=[REDACTED]');
  });

  it('does not retry a host name that does not resolve: a mistyped URL fails at once', async () => {
    const unresolved = Object.assign(new Error('getaddrinfo ENOTFOUND api.example.test'), {
      code: 'ENOTFOUND',
    });
    mock.agent.get(ORIGIN).intercept({ path: isUsers, method: 'GET' }).replyWithError(unresolved);
    const err = await client()
      .getJson(URL_)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect(events).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('retries a 200 whose JSON was cut mid-way', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, '{"data":[{"uid":"a"},{"ui');
    pool.intercept({ path: isUsers, method: 'GET' }).reply(200, { data: [{ uid: 'a' }, { uid: 'c' }] });
    const body = await client().getJson<{ data: unknown[] }>(URL_);
    expect(body.data).toHaveLength(2);
    expect(events[0]).toMatchObject({ status: 200, error: 'INVALID_JSON' });
  });

  it('throws ResponseBodyError when every body is unreadable', async () => {
    mock.agent.get(ORIGIN).intercept({ path: isUsers, method: 'GET' }).reply(200, '{"data":').times(2);
    const err = await client(2)
      .getJson(URL_)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseBodyError);
    expect(String((err as Error).message)).not.toContain('secret-token-123');
  });

  it('stops waiting when the signal aborts', async () => {
    mock.agent.get(ORIGIN).intercept({ path: isUsers, method: 'GET' }).reply(503, '').persist();
    const controller = new AbortController();
    const http = mock.http({
      clock: {
        now: () => 0,
        sleep: async () => {
          controller.abort(new Error('shutting down'));
          throw new Error('shutting down');
        },
      },
    });
    await expect(http.getJson(URL_, { signal: controller.signal })).rejects.toThrow('shutting down');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { BodyTooLargeError } from '../../src/errors/index.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const mock = useMockAgent(ORIGIN);
// Registered after the helper's hooks, so it runs before the agent is closed (hooks run in stack order).
afterEach(() => {
  mock.agent.assertNoPendingInterceptors();
});

describe('body size limit', () => {
  it('refuses a body larger than maxBodyBytes without retrying', async () => {
    const big = JSON.stringify({ data: 'x'.repeat(5000) });
    mock.agent.get(ORIGIN).intercept({ path: '/big?token=t', method: 'GET' }).reply(200, big);
    const clock = createManualClock();
    const http = mock.http({ clock, maxBodyBytes: 1024 });
    const err = await http.getJson(`${ORIGIN}/big?token=t`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BodyTooLargeError);
    expect((err as Error).message).toContain('maxBodyBytes');
    expect(clock.sleeps).toEqual([]);
  });

  it('refuses at once when Content-Length announces too much', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: '/declared', method: 'GET' })
      .reply(200, '{}', { headers: { 'content-length': '999999' } });
    const http = mock.http({ maxBodyBytes: 1024 });
    await expect(http.getJson(`${ORIGIN}/declared`)).rejects.toBeInstanceOf(BodyTooLargeError);
  });

  it('accepts a body within the limit, and an empty answer to a write', async () => {
    mock.agent.get(ORIGIN).intercept({ path: '/ok', method: 'GET' }).reply(200, { a: 1 });
    mock.agent.get(ORIGIN).intercept({ path: '/streams/1', method: 'DELETE' }).reply(204, '');
    const http = mock.http({ maxBodyBytes: 1024 });
    await expect(http.getJson(`${ORIGIN}/ok`)).resolves.toEqual({ a: 1 });
    await expect(http.sendJson('DELETE', `${ORIGIN}/streams/1`, undefined)).resolves.toBeUndefined();
  });
});

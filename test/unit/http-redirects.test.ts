import { describe, expect, it } from 'vitest';
import { RedirectRefusedError } from '../../src/errors/index.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';

const mock = useMockAgent(ORIGIN);

describe('redirects', () => {
  it('never follows a redirect to another host (the token would leak)', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: () => true, method: 'GET' })
      .reply(302, '', { headers: { location: 'https://evil.example.com/steal?token=tok-777' } });
    const evil = mock.agent.get('https://evil.example.com');
    evil.intercept({ path: () => true, method: 'GET' }).reply(200, { stolen: true });
    const http = mock.http();
    const err = await http.getJson(`${ORIGIN}/x?token=tok-777`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedirectRefusedError);
    expect((err as Error).message).not.toContain('tok-777');
    // The other host's interceptor was never consumed.
    expect(mock.agent.pendingInterceptors().some((i) => i.origin === 'https://evil.example.com')).toBe(true);
  });

  it('follows a same-origin GET redirect', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool.intercept({ path: (p) => p.startsWith('/old'), method: 'GET' }).reply(301, '', {
      headers: { location: '/new?token=t' },
    });
    pool.intercept({ path: (p) => p.startsWith('/new'), method: 'GET' }).reply(200, { ok: 1 });
    const http = mock.http();
    await expect(http.getJson(`${ORIGIN}/old?token=t`)).resolves.toEqual({ ok: 1 });
  });

  it('refuses redirects of writes and endless redirect loops', async () => {
    const pool = mock.agent.get(ORIGIN);
    pool
      .intercept({ path: '/streams?token=t', method: 'POST' })
      .reply(307, '', { headers: { location: '/other' } });
    pool
      .intercept({ path: '/loop', method: 'GET' })
      .reply(302, '', { headers: { location: '/loop' } })
      .persist();
    const http = mock.http({ maxRedirects: 3 });
    await expect(http.sendJson('POST', `${ORIGIN}/streams?token=t`, { name: 'x' })).rejects.toBeInstanceOf(
      RedirectRefusedError,
    );
    await expect(http.getJson(`${ORIGIN}/loop`)).rejects.toThrow('too many redirects');
  });
});

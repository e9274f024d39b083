import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/http/http-client.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';
import { createV2Client, type UsersPage } from '../../src/validic/v2-client.ts';

const ORIGIN = 'http://127.0.0.1:9';
let agent: MockAgent;
let requested: URL[];

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  requested = [];
});
afterEach(async () => {
  await agent.close();
});

/** Serves the users list from `answer(offset, limit)`. */
function serveUsers(answer: (offset: number, limit: number) => unknown) {
  agent
    .get(ORIGIN)
    .intercept({ path: (p) => p.startsWith('/api/organizations/org1/users?'), method: 'GET' })
    .reply((req) => {
      const url = new URL(req.path, ORIGIN);
      requested.push(url);
      return {
        statusCode: 200,
        data: JSON.stringify(
          answer(Number(url.searchParams.get('offset')), Number(url.searchParams.get('limit'))),
        ),
      };
    })
    .persist();
}

const users = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    id: `svc-${from + i}`,
    uid: `u-${from + i}`,
    status: 'active',
  }));

function client(limit?: number) {
  const http = createHttpClient({ dispatcher: agent, clock: createManualClock() });
  const v2 = createV2Client({ http, apiUrl: `${ORIGIN}/api`, orgId: 'org1', token: 'tok' });
  return async () => {
    const pages: UsersPage[] = [];
    for await (const page of v2.listUsersPages(limit === undefined ? {} : { limit })) pages.push(page);
    return pages;
  };
}

describe('listUsersPages', () => {
  it('uses page-index offsets and stops on {} past the end', async () => {
    const total = 5;
    serveUsers((offset, limit) =>
      offset * limit >= total
        ? {}
        : { data: users(offset * limit, Math.min(limit, total - offset * limit)), meta: {} },
    );
    // Full pages of 5 with limit 5: the short-page rule cannot fire, so {} ends it.
    const pages = await client(5)();
    expect(pages.map((p) => p.users.length)).toEqual([5]);
    expect(requested.map((u) => u.searchParams.get('offset'))).toEqual(['0', '1']);
    expect(requested[0]!.pathname).toBe('/api/organizations/org1/users');
    expect(requested[0]!.searchParams.get('token')).toBe('tok');
    expect(requested[0]!.searchParams.get('limit')).toBe('5');
  });

  it('stops on { data: [] }', async () => {
    serveUsers((offset) => (offset < 2 ? { data: users(offset * 2, 2) } : { data: [] }));
    const pages = await client(2)();
    expect(pages.flatMap((p) => p.users.map((u) => u.uid))).toEqual(['u-0', 'u-1', 'u-2', 'u-3']);
    expect(requested).toHaveLength(3);
  });

  it('stops after a page shorter than the limit the server reports, without asking again', async () => {
    serveUsers((offset) => ({ data: users(offset * 3, offset === 1 ? 1 : 3), meta: { limit: 3 } }));
    const pages = await client(3)();
    expect(pages.map((p) => p.offset)).toEqual([0, 1]);
    expect(requested).toHaveLength(2);
  });

  it('asks past a short page when the server does not say its limit (it may cap silently)', async () => {
    // The server applies 2 per page whatever is asked: stopping at the first short page would lose users.
    serveUsers((offset) => (offset < 3 ? { data: users(offset * 2, 2) } : {}));
    const pages = await client(3)();
    expect(pages.flatMap((p) => p.users)).toHaveLength(6);
    expect(requested).toHaveLength(4);
  });

  it('never loops when the server ignores offset', async () => {
    serveUsers(() => ({ data: users(0, 4) }));
    const pages = await client(4)();
    expect(pages).toHaveLength(1);
    expect(requested).toHaveLength(2);
  });

  it('keeps user objects untouched', async () => {
    const raw = { id: 's', uid: 'u', extra: { nested: [1, 2] }, sources: [] };
    serveUsers((offset) => (offset === 0 ? { data: [raw] } : {}));
    const pages = await client()();
    expect(pages[0]!.users[0]).toEqual(raw);
    expect(requested[0]!.searchParams.get('limit')).toBe('1000');
  });
});

import { describe, expect, it } from 'vitest';
import { IncompleteListingError } from '../../src/errors/index.ts';
import { createV2Client, type UsersPage } from '../../src/validic/v2-client.ts';
import { rawUsers as users } from '../helpers/fixtures/index.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'http://127.0.0.1:9';
const mock = useMockAgent(ORIGIN);

/** Serves the users list from `answer(offset, limit)`. */
const serveUsers = (answer: (offset: number, limit: number) => unknown) =>
  mock.serve(
    ({ url }) => ({
      body: answer(Number(url.searchParams.get('offset')), Number(url.searchParams.get('limit'))),
    }),
    { path: (p) => p.startsWith('/api/organizations/org1/users?') },
  );

function client(limit?: number) {
  const v2 = createV2Client({ http: mock.http(), apiUrl: `${ORIGIN}/api`, orgId: 'org1', token: 'tok' });
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
    expect(mock.requested.map((u) => u.searchParams.get('offset'))).toEqual(['0', '1']);
    expect(mock.requested[0]!.pathname).toBe('/api/organizations/org1/users');
    expect(mock.requested[0]!.searchParams.get('token')).toBe('tok');
    expect(mock.requested[0]!.searchParams.get('limit')).toBe('5');
  });

  it('stops on { data: [] }', async () => {
    serveUsers((offset) => (offset < 2 ? { data: users(offset * 2, 2) } : { data: [] }));
    const pages = await client(2)();
    expect(pages.flatMap((p) => p.users.map((u) => u.uid))).toEqual(['u-0', 'u-1', 'u-2', 'u-3']);
    expect(mock.requested).toHaveLength(3);
  });

  it('stops after a page shorter than the limit the server reports, without asking again', async () => {
    serveUsers((offset) => ({ data: users(offset * 3, offset === 1 ? 1 : 3), meta: { limit: 3 } }));
    const pages = await client(3)();
    expect(pages.map((p) => p.offset)).toEqual([0, 1]);
    expect(mock.requested).toHaveLength(2);
  });

  it('asks past a short page when the server does not say its limit (it may cap silently)', async () => {
    // The server applies 2 per page whatever is asked: stopping at the first short page would lose users.
    serveUsers((offset) => (offset < 3 ? { data: users(offset * 2, 2) } : {}));
    const pages = await client(3)();
    expect(pages.flatMap((p) => p.users)).toHaveLength(6);
    expect(mock.requested).toHaveLength(4);
  });

  it('never loops when the server ignores offset, and says the listing is incomplete', async () => {
    serveUsers(() => ({ data: users(0, 4) }));
    const pages: UsersPage[] = [];
    const v2 = createV2Client({ http: mock.http(), apiUrl: `${ORIGIN}/api`, orgId: 'org1', token: 'tok' });
    const reading = (async () => {
      for await (const page of v2.listUsersPages({ limit: 4 })) pages.push(page);
    })();
    await expect(reading).rejects.toThrow(IncompleteListingError);
    await expect(reading).rejects.toThrow(/page 1 repeated users already read/);
    // The first page was handed over before the error: what was read is not lost.
    expect(pages.map((p) => p.users.length)).toEqual([4]);
    expect(mock.requested).toHaveLength(2);
  });

  it.each([
    [
      'an early {}',
      (offset: number) => (offset < 2 ? { data: users(offset * 3, 3), meta: { total: 10 } } : {}),
    ],
    [
      'a short page',
      (offset: number) => ({ data: users(offset * 3, offset < 1 ? 3 : 1), meta: { total: 10, limit: 3 } }),
    ],
  ])('says a listing that ends short of meta.total (%s) is incomplete', async (_, answer) => {
    serveUsers(answer);
    const error = await client(3)().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(IncompleteListingError);
    expect(error).toMatchObject({ total: 10 });
    expect((error as Error).message).toMatch(/GET \/users: read \d of 10 \(meta.total 10/);
  });

  it('is complete when it reads meta.total users', async () => {
    serveUsers((offset) =>
      offset < 2 ? { data: users(offset * 3, offset === 0 ? 3 : 2), meta: { total: 5 } } : {},
    );
    const pages = await client(3)();
    expect(pages.flatMap((p) => p.users)).toHaveLength(5);
  });

  it('keeps user objects untouched', async () => {
    const raw = { id: 's', uid: 'u', extra: { nested: [1, 2] }, sources: [] };
    serveUsers((offset) => (offset === 0 ? { data: [raw] } : {}));
    const pages = await client()();
    expect(pages[0]!.users[0]).toEqual(raw);
    expect(mock.requested[0]!.searchParams.get('limit')).toBe('1000');
  });
});

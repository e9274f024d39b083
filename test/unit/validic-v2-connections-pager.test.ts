import { describe, expect, it } from 'vitest';
import { createV2Client } from '../../src/validic/v2-client.ts';
import { rawConnectionEvents as events } from '../helpers/fixtures/index.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'https://api.example.test';
const mock = useMockAgent(ORIGIN);
const serve = (answer: (page: number, limit: number) => unknown) =>
  mock.serve(({ url }) => ({
    body: answer(Number(url.searchParams.get('page')), Number(url.searchParams.get('limit'))),
  }));

async function collect(limit: number) {
  const v2 = createV2Client({
    http: mock.http(),
    apiUrl: ORIGIN,
    orgId: 'org1',
    token: 'tok',
  });
  const ids: string[] = [];
  for await (const page of v2.listConnectionsPages({
    startDate: '2026-01-01',
    endDate: '2026-01-30',
    limit,
  })) {
    ids.push(...page.connections.map((c) => String(c.id)));
  }
  return ids;
}

describe('listConnectionsPages', () => {
  it('pages with `page` until {} and reads the {connections, meta} envelope', async () => {
    const total = 6;
    serve((page, limit) =>
      page * limit >= total
        ? {}
        : { connections: events(page * limit, Math.min(limit, total - page * limit)), meta: { limit, page } },
    );
    expect(await collect(3)).toEqual(['ev-0', 'ev-1', 'ev-2', 'ev-3', 'ev-4', 'ev-5']);
    expect(mock.requested.map((u) => u.searchParams.get('page'))).toEqual(['0', '1', '2']);
    expect(mock.requested[0]!.pathname).toBe('/organizations/org1/connections');
    expect(mock.requested[0]!.searchParams.get('start_date')).toBe('2026-01-01');
    expect(mock.requested[0]!.searchParams.get('end_date')).toBe('2026-01-30');
  });

  it('stops when meta.total is reached, on { data: [] } and on a repeated page', async () => {
    serve((page, limit) => ({ connections: events(page * limit, limit), meta: { limit, page, total: 4 } }));
    expect(await collect(2)).toEqual(['ev-0', 'ev-1', 'ev-2', 'ev-3']);
    expect(mock.requested).toHaveLength(2);

    await mock.reset();
    serve((page) => (page === 0 ? { connections: events(0, 2) } : { data: [] }));
    expect(await collect(2)).toEqual(['ev-0', 'ev-1']);
    expect(mock.requested).toHaveLength(2);

    await mock.reset();
    serve(() => ({ connections: events(0, 2) }));
    expect(await collect(2)).toEqual(['ev-0', 'ev-1']);
    expect(mock.requested).toHaveLength(2);
  });

  it('honours a server-capped limit from meta', async () => {
    // Asked 1000, the server applies 2 and says so in meta: pages of 2 are full pages, not short ones.
    serve((page) => (page < 2 ? { connections: events(page * 2, 2), meta: { limit: 2, page } } : {}));
    expect(await collect(1000)).toEqual(['ev-0', 'ev-1', 'ev-2', 'ev-3']);
  });
});

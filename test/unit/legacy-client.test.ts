import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/errors/index.ts';
import type { SummaryPage } from '../../src/legacy/legacy-client.ts';
import { createLegacyClient, formatLegacyInstant } from '../../src/legacy/legacy-client.ts';
import { LEGACY_OBJECTS, toLegacyObject } from '../../src/validic/platform-limits.ts';
import { rawLegacyRecord } from '../helpers/fixtures/index.ts';
import { useMockAgent } from '../helpers/mock-agent.ts';

const ORIGIN = 'http://127.0.0.1:9';
const mock = useMockAgent(ORIGIN);

/** Legacy list server: `total` records, limit capped at 200, `next` null after the last page. */
function serve(object: string, total: number) {
  mock.serve(({ url }) => {
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const limit = Math.min(200, Number(url.searchParams.get('limit') ?? 100));
    const items = Array.from({ length: Math.max(0, Math.min(total, offset + limit) - offset) }, (_, i) =>
      rawLegacyRecord({ _id: `${object}-${offset + i}`, last_updated: '2026-01-01T00:00:00+00:00' }),
    );
    const next = offset + limit < total ? `${ORIGIN}/v1/next?offset=${offset + limit}&limit=${limit}` : null;
    return { body: { summary: { results: total, offset, limit, next, previous: null }, [object]: items } };
  });
}

function client(serviceVersion?: string) {
  return createLegacyClient({
    http: mock.http(),
    legacyUrl: `${ORIGIN}/legacy`,
    orgId: 'org9',
    accessToken: 'legacy-tok',
    ...(serviceVersion ? { serviceVersion } : {}),
  });
}

async function collect(pages: AsyncIterable<SummaryPage>): Promise<string[]> {
  const ids: string[] = [];
  for await (const page of pages) ids.push(...page.items.map((i) => String(i._id)));
  return ids;
}

const range = { startDate: new Date('2026-01-01T00:00:00.123Z'), endDate: '2026-01-02T00:00:00Z' };

describe('legacy client', () => {
  it('pages org-level latest through a 200 cap without skipping', async () => {
    serve('fitness', 450);
    const ids = await collect(client('2026-01-15').pageLatest('fitness', range));
    expect(ids).toHaveLength(450);
    expect(new Set(ids).size).toBe(450);
    expect(mock.requests.map((r) => r.url.searchParams.get('offset'))).toEqual(['0', '200', '400']);
    const first = mock.requests[0]!;
    expect(first.url.pathname).toBe('/legacy/v1/organizations/org9/fitness/latest.json');
    expect(first.url.searchParams.get('access_token')).toBe('legacy-tok');
    expect(first.url.searchParams.get('expanded')).toBe('1');
    expect(first.url.searchParams.get('limit')).toBe('1000');
    expect(first.url.searchParams.get('start_date')).toBe('2026-01-01T00:00:00Z');
    expect(first.url.searchParams.get('end_date')).toBe('2026-01-02T00:00:00Z');
    expect(first.headers['service-version']).toBe('2026-01-15');
  });

  it('builds org list, user list and user latest paths', async () => {
    serve('routine', 1);
    const c = client();
    await collect(c.pageOrgList('routine', range));
    await collect(c.pageUserList('user 1', 'routine', range));
    await collect(c.pageUserLatest('user 1', 'routine', range));
    expect(mock.requests.map((r) => r.url.pathname)).toEqual([
      '/legacy/v1/organizations/org9/routine.json',
      '/legacy/v1/organizations/org9/users/user%201/routine.json',
      '/legacy/v1/organizations/org9/users/user%201/routine/latest.json',
    ]);
    expect(mock.requests[0]!.headers['service-version']).toBeUndefined();
  });

  it('reads the organization summary', async () => {
    mock.agent
      .get(ORIGIN)
      .intercept({ path: '/legacy/v1/organizations/org9.json?access_token=legacy-tok', method: 'GET' })
      .reply(200, { summary: { status: 200 }, organization: { name: 'Acme' } });
    await expect(client().getOrganization()).resolves.toMatchObject({ organization: { name: 'Acme' } });
  });

  it('knows the legacy objects', () => {
    expect(LEGACY_OBJECTS).toContain('tobacco_cessation');
    expect(toLegacyObject('Weight')).toBe('weight');
    expect(() => toLegacyObject('steps')).toThrow(UsageError);
    expect(formatLegacyInstant('2026-03-04T05:06:07.890Z')).toBe('2026-03-04T05:06:07Z');
  });
});

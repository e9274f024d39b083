import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RawObject } from '../../src/validic/envelopes.ts';
import { offsetOfLink, pageBySummary } from '../../src/legacy/legacy-summary-pager.ts';

const BASE = 'https://legacy.example.test/v1/organizations/o/fitness/latest.json?access_token=t&expanded=1';

interface ServerModel {
  total: number;
  /** Largest page the server applies (asked limits above are reduced). */
  cap: number;
  /** After the last page: null `next`, a link back to the first page, or no `next` at all. */
  end: 'null' | 'wrap' | 'missing';
  /** `next` built from the applied limit (consistent) or from the asked one (jumps past records). */
  nextFrom: 'applied' | 'asked';
  /** `next` as offset link or as 1-based page link. */
  linkStyle: 'offset' | 'page';
  /** Whether `summary.results` is present. */
  results: boolean;
  /** Whether `summary.next` is present on middle pages at all. */
  nextOnMiddlePages: boolean;
}

/** A pure simulated legacy list endpoint. */
function simulate(model: ServerModel) {
  const requests: URL[] = [];
  const fetchPage = async (url: URL): Promise<{ items: RawObject[]; summary: RawObject }> => {
    requests.push(url);
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const asked = Number(url.searchParams.get('limit') ?? 100);
    const applied = Math.min(asked, model.cap);
    const end = Math.min(model.total, offset + applied);
    const items = Array.from({ length: Math.max(0, end - offset) }, (_, i) => ({ _id: `r${offset + i}` }));
    const link = (o: number, l: number) => {
      const u = new URL(url);
      if (model.linkStyle === 'offset') u.searchParams.set('offset', String(o));
      else {
        u.searchParams.delete('offset');
        u.searchParams.set('page', String(Math.floor(o / l) + 1));
      }
      u.searchParams.set('limit', String(l));
      return u.href;
    };
    const summary: RawObject = { offset, limit: applied, status: 200 };
    if (model.results) summary.results = model.total;
    const step = model.nextFrom === 'applied' ? applied : asked;
    if (offset + applied < model.total) {
      if (model.nextOnMiddlePages)
        summary.next = link(offset + step, model.nextFrom === 'applied' ? applied : asked);
    } else if (model.end === 'null') summary.next = null;
    else if (model.end === 'wrap') summary.next = link(0, applied);
    return { items, summary };
  };
  return { fetchPage, requests };
}

const modelArb: fc.Arbitrary<ServerModel> = fc.record({
  total: fc.integer({ min: 0, max: 2500 }),
  cap: fc.integer({ min: 1, max: 1000 }),
  end: fc.constantFrom('null', 'wrap', 'missing'),
  nextFrom: fc.constantFrom('applied', 'asked'),
  linkStyle: fc.constantFrom('offset', 'page'),
  results: fc.boolean(),
  nextOnMiddlePages: fc.boolean(),
}) as fc.Arbitrary<ServerModel>;

describe('legacy summary pager', () => {
  it('never loops and never skips, whatever the server does (property)', async () => {
    await fc.assert(
      fc.asyncProperty(modelArb, fc.constantFrom(100, 200, 500, 1000), async (model, limit) => {
        const { fetchPage, requests } = simulate(model);
        const ids: string[] = [];
        for await (const page of pageBySummary({ firstUrl: new URL(BASE), limit, fetchPage })) {
          ids.push(...page.items.map((item) => String(item._id)));
        }
        // Every record exactly once, in order.
        expect(ids).toEqual(Array.from({ length: model.total }, (_, i) => `r${i}`));
        // Bounded: the pages needed plus at most one probe past the end.
        const applied = Math.min(limit, model.cap);
        expect(requests.length).toBeLessThanOrEqual(Math.ceil(model.total / applied) + 1);
        // Always asked with our limit and our credentials.
        expect(requests.every((u) => u.searchParams.get('limit') === String(limit))).toBe(true);
        expect(requests.every((u) => u.searchParams.get('access_token') === 't')).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('stops when the server ignores offset and keeps sending the first page', async () => {
    let calls = 0;
    const pages: string[][] = [];
    for await (const page of pageBySummary({
      firstUrl: new URL(BASE),
      limit: 2,
      fetchPage: async () => {
        calls++;
        return { items: [{ _id: 'a' }, { _id: 'b' }], summary: {} };
      },
    })) {
      pages.push(page.items.map((i) => String(i._id)));
    }
    expect(pages).toEqual([['a', 'b']]);
    expect(calls).toBe(2);
  });

  it('reads offsets from offset and page links', () => {
    const base = new URL(BASE);
    expect(offsetOfLink('?offset=400&limit=200', base, 100)).toBe(400);
    expect(offsetOfLink('https://x.test/v1/a.json?page=3&limit=200', base, 100)).toBe(400);
    expect(offsetOfLink('https://x.test/v1/a.json?page=1', base, 100)).toBe(0);
    expect(offsetOfLink('https://x.test/v1/a.json', base, 100)).toBeUndefined();
  });
});

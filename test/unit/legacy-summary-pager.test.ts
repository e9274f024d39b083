import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IncompleteListingError } from '../../src/errors/index.ts';
import { pageBySummary, type SummaryPage } from '../../src/legacy/legacy-client.ts';
import type { RawObject } from '../../src/validic/requests.ts';

const BASE = 'https://legacy.example.test/v1/organizations/o/fitness/latest.json?access_token=t&expanded=1';

interface ServerModel {
  total: number;
  /** Largest page the server applies (asked limits above are reduced). */
  cap: number;
  /**
   * How the server reads a request, and so how it writes its links: `offset` (records to skip; `page`
   * only without `offset`; links carry `offset`), `page` (`offset` ignored; links carry `page`),
   * `page-and-offset` (skip offset + (page − 1) × limit; links carry the next `page` and the request's
   * `offset`), `ignore` (always the first page; links carry `offset`).
   */
  paging: 'offset' | 'page' | 'page-and-offset' | 'ignore';
  /** Offset links built from the limit asked instead of the one applied (they jump past records). */
  nextFromAsked: boolean;
  /** After the last page: null `next`, a link back to the first page, or no `next` at all. */
  end: 'null' | 'wrap' | 'missing';
  /** Whether `summary.results` is sent. */
  results: boolean;
  /** Whether pages before the last carry `next` at all. */
  nextOnMiddlePages: boolean;
  /** Lists longer than `after` serve only `after` records: empty pages past them, or `next` ending there. */
  cut: { after: number; style: 'empty-page' | 'next-null' } | null;
}

/** A pure simulated legacy list endpoint. */
function simulate(model: ServerModel) {
  const requests: URL[] = [];
  const all = Array.from({ length: model.total }, (_, i) => ({ _id: `r${i}` }));
  const cutApplies = model.cut !== null && model.total > model.cut.after;
  const served = cutApplies ? all.slice(0, model.cut!.after) : all;
  const linkedTotal = cutApplies && model.cut!.style === 'next-null' ? served.length : model.total;
  const fetchPage = async (url: URL): Promise<{ items: RawObject[]; summary: RawObject }> => {
    requests.push(url);
    const q = url.searchParams;
    const asked = Number(q.get('limit') ?? 100);
    const applied = Math.min(asked, model.cap);
    const offset = Number(q.get('offset') ?? 0);
    const page = Number(q.get('page') ?? 1);
    const skip = {
      offset: q.has('offset') || !q.has('page') ? offset : (page - 1) * applied,
      page: (page - 1) * applied,
      'page-and-offset': offset + (page - 1) * applied,
      ignore: 0,
    }[model.paging];
    const items = served.slice(skip, skip + applied);
    const link = (to: number, limit: number) => {
      const u = new URL(url);
      u.searchParams.set('limit', String(limit));
      if (model.paging === 'page') {
        u.searchParams.delete('offset');
        u.searchParams.set('page', String(Math.floor(to / limit) + 1));
      } else if (model.paging === 'page-and-offset') {
        u.searchParams.set('offset', String(to === 0 ? 0 : offset));
        u.searchParams.set('page', String(to === 0 ? 1 : Math.floor((to - offset) / limit) + 1));
      } else {
        u.searchParams.delete('page');
        u.searchParams.set('offset', String(to));
      }
      return u.href;
    };
    const summary: RawObject = { offset: skip, limit: applied, status: 200 };
    if (model.results) summary.results = model.total;
    const step = model.nextFromAsked && model.paging === 'offset' ? asked : applied;
    if (skip + applied < linkedTotal) {
      if (model.nextOnMiddlePages) summary.next = link(skip + step, step);
    } else if (model.end === 'null') summary.next = null;
    else if (model.end === 'wrap') summary.next = link(0, applied);
    return { items, summary };
  };
  return { fetchPage, requests };
}

/** A server whose links and paging agree, that serves every record: the pager must read it all, no error. */
function isConsistent(m: ServerModel, limit: number): boolean {
  if (m.cut !== null && m.total > m.cut.after) return false;
  // A server ignoring paging altogether is readable when one page holds the whole list.
  if (m.paging === 'ignore') return m.total <= Math.min(limit, m.cap) && m.results;
  // Without a link (and without a count to stop at), the pager continues by offset, which a server
  // reading `page` alone ignores: the repeat it then sends is called incomplete, never read as the end.
  if (m.paging === 'page') return m.nextOnMiddlePages && (m.end !== 'missing' || m.results);
  return true;
}

const modelArb: fc.Arbitrary<ServerModel> = fc.record({
  total: fc.integer({ min: 0, max: 2500 }),
  cap: fc.integer({ min: 1, max: 1000 }),
  paging: fc.constantFrom('offset', 'page', 'page-and-offset', 'ignore'),
  nextFromAsked: fc.boolean(),
  end: fc.constantFrom('null', 'wrap', 'missing'),
  results: fc.boolean(),
  nextOnMiddlePages: fc.boolean(),
  cut: fc.option(
    fc.record({
      after: fc.integer({ min: 0, max: 2500 }),
      style: fc.constantFrom('empty-page', 'next-null'),
    }),
    { nil: null },
  ),
}) as fc.Arbitrary<ServerModel>;

async function read(options: Parameters<typeof pageBySummary>[0]) {
  const pages: SummaryPage[] = [];
  let error: unknown;
  try {
    for await (const page of pageBySummary(options)) pages.push(page);
  } catch (thrown) {
    error = thrown;
  }
  return { pages, ids: pages.flatMap((p) => p.items.map((item) => String(item._id))), error };
}

describe('legacy summary pager', () => {
  it('never loops, and either reads every record or says the listing is incomplete (property)', async () => {
    await fc.assert(
      fc.asyncProperty(modelArb, fc.constantFrom(10, 100, 200, 1000), async (model, limit) => {
        const { fetchPage, requests } = simulate(model);
        const { ids, error } = await read({ firstUrl: new URL(BASE), limit, fetchPage });
        if (error !== undefined) expect(error).toBeInstanceOf(IncompleteListingError);
        const everyRecord = Array.from({ length: model.total }, (_, i) => `r${i}`);
        // A server that agrees with itself is read whole, each record once, in order, without an error.
        if (isConsistent(model, limit)) {
          expect(error).toBeUndefined();
          expect(ids).toEqual(everyRecord);
        }
        // Whenever the server says how many records it holds, a silent shortfall is impossible.
        if (model.results && error === undefined) expect(new Set(ids)).toEqual(new Set(everyRecord));
        // Bounded: the pages needed plus at most two more (a probe past the end, a repeat).
        const applied = Math.min(limit, model.cap);
        expect(requests.length).toBeLessThanOrEqual(Math.ceil(model.total / applied) + 2);
        // Always our own host, path and credentials, whatever the links say.
        for (const url of requests) {
          expect(url.origin + url.pathname).toBe(new URL(BASE).origin + new URL(BASE).pathname);
          expect(url.searchParams.get('access_token')).toBe('t');
          expect(url.searchParams.get('expanded')).toBe('1');
        }
      }),
      { numRuns: 400 },
    );
  });

  it('follows page links when the server ignores offset (pages of 10)', async () => {
    const { fetchPage, requests } = simulate({
      total: 35,
      cap: 10,
      paging: 'page',
      nextFromAsked: false,
      end: 'null',
      results: true,
      nextOnMiddlePages: true,
      cut: null,
    });
    const { ids, error } = await read({ firstUrl: new URL(BASE), limit: 1000, fetchPage });
    expect(error).toBeUndefined();
    expect(ids).toHaveLength(35);
    expect(requests.map((u) => [u.searchParams.get('page'), u.searchParams.get('offset')])).toEqual([
      [null, '0'],
      ['2', null],
      ['3', null],
      ['4', null],
    ]);
  });

  it('follows links carrying page and offset together', async () => {
    const { fetchPage, requests } = simulate({
      total: 25,
      cap: 10,
      paging: 'page-and-offset',
      nextFromAsked: false,
      end: 'null',
      results: true,
      nextOnMiddlePages: true,
      cut: null,
    });
    const { ids, error } = await read({ firstUrl: new URL(BASE), limit: 1000, fetchPage });
    expect(error).toBeUndefined();
    expect(ids).toEqual(Array.from({ length: 25 }, (_, i) => `r${i}`));
    expect(requests.map((u) => `${u.searchParams.get('page')}/${u.searchParams.get('offset')}`)).toEqual([
      'null/0',
      '2/0',
      '3/0',
    ]);
  });

  it.each([
    ['an early empty page', 'empty-page'],
    ['links that end before summary.results', 'next-null'],
  ] as const)(
    'says a listing cut short by %s is incomplete, after yielding what it read',
    async (_, style) => {
      const { fetchPage } = simulate({
        total: 42,
        cap: 10,
        paging: 'offset',
        nextFromAsked: false,
        end: 'null',
        results: true,
        nextOnMiddlePages: true,
        cut: { after: 25, style },
      });
      const { ids, error } = await read({
        firstUrl: new URL(BASE),
        limit: 10,
        fetchPage,
        what: 'the fitness list',
      });
      expect(ids).toHaveLength(25);
      expect(error).toBeInstanceOf(IncompleteListingError);
      expect((error as IncompleteListingError).message).toMatch(/the fitness list: read 25 of 42/);
      expect(error).toMatchObject({ listed: 25, total: 42 });
    },
  );

  it('says so when the server keeps sending the first page, without summary.results', async () => {
    let calls = 0;
    const { ids, error } = await read({
      firstUrl: new URL(BASE),
      limit: 2,
      fetchPage: async () => {
        calls++;
        return { items: [{ _id: 'a' }, { _id: 'b' }], summary: {} };
      },
    });
    expect(ids).toEqual(['a', 'b']);
    expect(calls).toBe(2);
    expect(error).toBeInstanceOf(IncompleteListingError);
    expect((error as Error).message).toMatch(/repeated records already read/);
  });

  it('ends at a link back to the first page when the server does not count (the wrap-around)', async () => {
    const { fetchPage, requests } = simulate({
      total: 15,
      cap: 10,
      paging: 'page',
      nextFromAsked: false,
      end: 'wrap',
      results: false,
      nextOnMiddlePages: true,
      cut: null,
    });
    const { ids, error } = await read({ firstUrl: new URL(BASE), limit: 10, fetchPage });
    expect(error).toBeUndefined();
    expect(ids).toHaveLength(15);
    expect(requests).toHaveLength(2);
  });

  it('takes only the paging from a link: never its host, path, filters or credentials', async () => {
    const requests: URL[] = [];
    const { ids, error } = await read({
      firstUrl: new URL(BASE),
      limit: 1,
      fetchPage: async (url) => {
        requests.push(url);
        const first = requests.length === 1;
        return {
          items: [{ _id: first ? 'a' : 'b' }],
          summary: {
            results: 2,
            next: first ? 'https://evil.test/steal?access_token=theirs&expanded=0&page=2&limit=1' : null,
          },
        };
      },
    });
    expect(error).toBeUndefined();
    expect(ids).toEqual(['a', 'b']);
    expect(requests[1]!.href).toBe(
      'https://legacy.example.test/v1/organizations/o/fitness/latest.json?access_token=t&expanded=1&limit=1&page=2',
    );
  });

  it('repairs an offset link that jumps past records a capped page did not hold', async () => {
    const { fetchPage, requests } = simulate({
      total: 450,
      cap: 200,
      paging: 'offset',
      nextFromAsked: true,
      end: 'null',
      results: true,
      nextOnMiddlePages: true,
      cut: null,
    });
    const { ids, error } = await read({ firstUrl: new URL(BASE), limit: 1000, fetchPage });
    expect(error).toBeUndefined();
    expect(ids).toHaveLength(450);
    expect(requests.map((u) => u.searchParams.get('offset'))).toEqual(['0', '200', '400']);
  });
});

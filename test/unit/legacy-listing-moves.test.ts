/**
 * A legacy listing that changes while it is paged is read again from its start: the case (a
 * record of page 1 updated out of the window after page 1 was read, so every offset shifts and one
 * untouched record is never served), records added and deleted between pages, and a listing that never
 * holds still (given up as incomplete after the bounded re-reads). Random changes between pages: no
 * record that was in the listing throughout is ever missed by a read the pager calls complete.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IncompleteListingError } from '../../src/errors/index.ts';
import { collectListedIds } from '../../src/legacy/confirm-legacy-deletes.ts';
import { pageBySummary, type SummaryPage } from '../../src/legacy/legacy-client.ts';
import type { RawObject } from '../../src/validic/requests.ts';
import { LISTING_REREADS } from '../../src/validic/requests.ts';

const BASE = 'https://legacy.example.test/v1/organizations/o/fitness/latest.json?access_token=t&expanded=1';

/** A listing by `last_updated` (then `_id`), offset paging, and a hook run after each page is served. */
function movingListing(initial: string[], between: (served: number, ids: string[]) => void) {
  const ids = [...initial];
  let served = 0;
  const fetchPage = async (url: URL): Promise<{ items: RawObject[]; summary: RawObject }> => {
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const limit = Number(url.searchParams.get('limit'));
    const items = ids.slice(offset, offset + limit).map((_id) => ({ _id }));
    const next = offset + limit < ids.length ? `${BASE}&offset=${offset + limit}&limit=${limit}` : null;
    const summary = { results: ids.length, offset, limit, next };
    served++;
    between(served, ids);
    return { items, summary };
  };
  return { ids, fetchPage };
}

async function readAll(pages: AsyncIterable<SummaryPage>) {
  const byPass = new Map<number, Set<string>>();
  for await (const page of pages) {
    const set = byPass.get(page.pass) ?? new Set<string>();
    for (const item of page.items) set.add(item._id as string);
    byPass.set(page.pass, set);
  }
  return byPass;
}

const ten = Array.from({ length: 10 }, (_, i) => `r${i}`);

describe('a legacy listing that moves under the pager', () => {
  it('reads again when a record of page 1 leaves the window after page 1 (the old pager ended "complete")', async () => {
    // Page 1 (r0..r3) served, then r1 is updated: its last_updated moves past the window, it leaves the
    // listing and every offset shifts by one: page 2 at offset 4 starts at r5, r4 is never served.
    const listing = movingListing(ten, (served, ids) => {
      if (served === 1) ids.splice(ids.indexOf('r1'), 1);
    });
    const byPass = await readAll(
      pageBySummary({ firstUrl: new URL(BASE), limit: 4, fetchPage: listing.fetchPage }),
    );
    const last = byPass.get(Math.max(...byPass.keys()))!;
    expect(byPass.size).toBe(2);
    expect([...last].sort()).toEqual(ten.filter((id) => id !== 'r1').sort());
  });

  it('reads again when a page repeats part of what was read (records added before it)', async () => {
    const listing = movingListing(ten, (served, ids) => {
      if (served === 1) ids.unshift('a0');
    });
    const byPass = await readAll(
      pageBySummary({ firstUrl: new URL(BASE), limit: 4, fetchPage: listing.fetchPage }),
    );
    expect([...byPass.get(1)!].sort()).toEqual([...ten, 'a0'].sort());
  });

  it('gives a listing that never holds still up as incomplete after the bounded re-reads', async () => {
    let n = 0;
    const listing = movingListing([...ten, ...ten.map((id) => `${id}b`)], (_served, ids) => {
      ids.shift();
      n++;
    });
    const pages: SummaryPage[] = [];
    const read = async () => {
      for await (const page of pageBySummary({
        firstUrl: new URL(BASE),
        limit: 4,
        fetchPage: listing.fetchPage,
      }))
        pages.push(page);
    };
    await expect(read()).rejects.toBeInstanceOf(IncompleteListingError);
    expect(Math.max(...pages.map((p) => p.pass))).toBe(LISTING_REREADS);
    expect(n).toBe(2 * (LISTING_REREADS + 1));
  });

  it('lists for the delete checks only what the last read listed', async () => {
    const listing = movingListing(ten, (served, ids) => {
      if (served === 1) ids.splice(ids.indexOf('r1'), 1);
    });
    const listed = new Set<string>();
    for await (const _ of collectListedIds(
      pageBySummary({ firstUrl: new URL(BASE), limit: 4, fetchPage: listing.fetchPage }),
      listed,
    ));
    expect(listed.has('r1')).toBe(false);
    expect(listed.size).toBe(9);
  });

  it('reads again when records are added after the read started (a window reaching the present)', async () => {
    const listing = movingListing(ten, (served, ids) => {
      if (served === 2) ids.push('n0', 'n1');
    });
    const byPass = await readAll(
      pageBySummary({ firstUrl: new URL(BASE), limit: 4, fetchPage: listing.fetchPage }),
    );
    expect(byPass.size).toBe(2);
    expect(byPass.get(1)!.size).toBe(12);
  });

  // legacy.latest asks no further than the platform's now, so while it pages records can only leave the
  // listing (an update stamps them past the window's end, a delete removes them): the property's changes.
  it('never calls complete a read that missed a record present throughout (random deletes and updates between pages)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 9 }),
        fc.array(
          fc.record({
            after: fc.integer({ min: 1, max: 30 }),
            kind: fc.constantFrom('delete', 'update'),
            at: fc.nat(),
          }),
          { maxLength: 6 },
        ),
        async (total, limit, changes) => {
          const initial = Array.from({ length: total }, (_, i) => `r${String(i).padStart(3, '0')}`);
          const touched = new Set<string>();
          const listing = movingListing(initial, (served, ids) => {
            for (const change of changes.filter((c) => c.after === served)) {
              if (ids.length > 0) {
                // Deleted, or updated out of the window (its last_updated moves past the end).
                const id = ids[change.at % ids.length]!;
                touched.add(id);
                ids.splice(ids.indexOf(id), 1);
              }
            }
          });
          let byPass: Map<number, Set<string>>;
          try {
            byPass = await readAll(
              pageBySummary({ firstUrl: new URL(BASE), limit, fetchPage: listing.fetchPage }),
            );
          } catch (error) {
            expect(error).toBeInstanceOf(IncompleteListingError);
            return;
          }
          const last = byPass.get(Math.max(0, ...byPass.keys())) ?? new Set<string>();
          for (const id of initial) if (!touched.has(id)) expect(last.has(id), id).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

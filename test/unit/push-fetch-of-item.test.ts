/**
 * What fetch a push item becomes, and how fetches of one key merge (the same rule the store's upsert
 * applies): an activity item reads the user's object around its date, within the 28-day bucket of that
 * date, a record item that record, a `last_updated` item a latest window in its hour; a refused minute
 * becomes one org-level window per object. Announced dates are clamped to what the platform serves (the
 * last year to the present, a day of slack either way), and however the items of a user and object are
 * dated, every fetch they merge into plans one list request. Merging in any order gives the same fetches.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  activityRequests,
  clampAnnouncedDate,
  coalescedDueAt,
  pushFetchOfItem,
  refusedMinuteFetches,
} from '../../src/push/push-items.ts';
import {
  coalescePushFetches,
  mergePushFetch,
  mergeSources,
  type PushFetchInput,
} from '../../src/warehouse/push-fetch-store.ts';

const NOW = Date.parse('2026-03-15T12:00:03Z');
const timing = { now: NOW, coalesceMs: 10_000, updatedMarginMs: 600_000 };

describe('pushFetchOfItem', () => {
  it('reads the documented item as the user object list around its activity date, due at the window end', () => {
    const item = {
      object: 'weight' as const,
      userId: 'u1',
      activityDate: '2026-03-15T08:00:00.000Z',
      source: 'scale',
    };
    expect(pushFetchOfItem(item, 'org', timing)).toEqual({
      orgId: 'org',
      object: 'weight',
      mode: 'activity',
      userId: 'u1',
      recordId: '',
      // The 28-day window (aligned to the epoch) the date falls in.
      bucket: '2026-03-12',
      rangeStart: '2026-03-15T08:00:00.000Z',
      rangeEnd: '2026-03-15T08:00:00.000Z',
      sources: ['scale'],
      items: 1,
      dueAt: '2026-03-15T12:00:10.000Z',
    });
    expect(pushFetchOfItem({ ...item, source: undefined }, 'org', timing).sources).toBeNull();
  });

  it('reads a record item by id, and a last_updated item as a latest window within its hour', () => {
    expect(
      pushFetchOfItem({ object: 'sleep', userId: 'u', recordId: 'r', lastUpdated: NOW_ISO }, 'org', timing),
    ).toMatchObject({ mode: 'record', userId: 'u', recordId: 'r', rangeStart: null, rangeEnd: null });
    expect(
      pushFetchOfItem({ object: 'sleep', lastUpdated: '2026-03-15T11:05:00.000Z' }, 'org', timing),
    ).toMatchObject({
      mode: 'updated',
      userId: '',
      bucket: '2026-03-15T11',
      rangeStart: '2026-03-15T10:55:00.000Z',
      rangeEnd: '2026-03-15T11:15:00.000Z',
    });
    expect(pushFetchOfItem({ object: 'sleep' }, 'org', timing)).toMatchObject({
      mode: 'updated',
      bucket: '',
      rangeStart: null,
      rangeEnd: null,
    });
  });

  it('clamps an announced date to what the platform serves: a year back to the present, a day of slack', () => {
    const DAY = 86_400_000;
    const oldest = NOW - 366 * DAY;
    const newest = NOW + DAY;
    for (const [announced, read] of [
      ['1990-01-01T00:00:00Z', oldest],
      ['1000-01-01T00:00:00Z', oldest],
      ['2100-01-01T00:00:00Z', newest],
      ['2026-11-28T00:00:00Z', newest],
      ['2026-03-15T08:00:00Z', Date.parse('2026-03-15T08:00:00Z')],
      ['2025-03-14T12:00:04Z', Date.parse('2025-03-14T12:00:04Z')],
    ] as const) {
      expect(clampAnnouncedDate(Date.parse(announced), NOW), announced).toBe(read);
      const fetch = pushFetchOfItem(
        { object: 'weight', userId: 'u', activityDate: announced },
        'org',
        timing,
      );
      expect(fetch.rangeStart, announced).toBe(new Date(read).toISOString());
      const updated = pushFetchOfItem({ object: 'weight', lastUpdated: announced }, 'org', timing);
      expect(Date.parse(updated.rangeStart!), announced).toBe(read - timing.updatedMarginMs);
    }
  });

  it('is due at once without a coalescing window', () => {
    expect(coalescedDueAt(NOW, 0)).toBe(NOW);
    expect(coalescedDueAt(NOW, 10_000)).toBe(Date.parse('2026-03-15T12:00:10Z'));
    expect(coalescedDueAt(Date.parse('2026-03-15T12:00:10Z'), 10_000)).toBe(
      Date.parse('2026-03-15T12:00:20Z'),
    );
  });
});

const NOW_ISO = new Date(NOW).toISOString();

describe('refusedMinuteFetches', () => {
  it('gives one org-level latest window per object: the lag before the minute to its end, due after it', () => {
    const fetches = refusedMinuteFetches({
      orgId: 'org',
      objects: ['fitness', 'weight'],
      minuteStart: Date.parse('2026-03-15T12:00:00Z'),
      lagMs: 600_000,
      coalesceMs: 10_000,
    });
    expect(
      fetches.map((f) => [f.object, f.mode, f.userId, f.bucket, f.rangeStart, f.rangeEnd, f.dueAt]),
    ).toEqual(
      ['fitness', 'weight'].map((object) => [
        object,
        'refused',
        '',
        '2026-03-15T12',
        '2026-03-15T11:50:00.000Z',
        '2026-03-15T12:01:00.000Z',
        '2026-03-15T12:01:10.000Z',
      ]),
    );
  });
});

describe('merging fetches of one key', () => {
  const base: PushFetchInput = pushFetchOfItem(
    { object: 'weight', userId: 'u1', activityDate: '2026-03-15T08:00:00.000Z', source: 'b' },
    'org',
    timing,
  );

  it('widens the range, unites the sources, adds the items, keeps the earlier due', () => {
    const later = pushFetchOfItem(
      { object: 'weight', userId: 'u1', activityDate: '2026-03-14T08:00:00.000Z', source: 'a' },
      'org',
      { ...timing, now: NOW + 60_000 },
    );
    expect(mergePushFetch(base, later)).toMatchObject({
      rangeStart: '2026-03-14T08:00:00.000Z',
      rangeEnd: '2026-03-15T08:00:00.000Z',
      sources: ['a', 'b'],
      items: 2,
      dueAt: base.dueAt,
    });
    expect(mergeSources(['a'], null)).toBeNull();
    expect(mergeSources(['b', 'a'], ['a'])).toEqual(['a', 'b']);
  });

  it('keeps apart what differs in key, and merges a refused window to its latest minute', () => {
    const other = { ...base, userId: 'u2' };
    expect(coalescePushFetches([base, other, base]).map((f) => [f.userId, f.items])).toEqual([
      ['u1', 2],
      ['u2', 1],
    ]);
    const [a, b] = [0, 1].map(
      (m) =>
        refusedMinuteFetches({
          orgId: 'org',
          objects: ['fitness'],
          minuteStart: Date.parse('2026-03-15T12:00:00Z') + m * 60_000,
          lagMs: 600_000,
          coalesceMs: 0,
        })[0]!,
    );
    expect(mergePushFetch(a!, b!)).toMatchObject({
      rangeStart: '2026-03-15T11:50:00.000Z',
      rangeEnd: '2026-03-15T12:02:00.000Z',
      dueAt: '2026-03-15T12:02:00.000Z',
      items: 2,
    });
  });

  it('gives the same fetch whatever the order of the items', () => {
    const item = fc.record({
      day: fc.integer({ min: 0, max: 20 }),
      source: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
      at: fc.integer({ min: 0, max: 600_000 }),
    });
    const itemsAndOrder = fc
      .array(item, { minLength: 1, maxLength: 12 })
      .chain((items) =>
        fc.tuple(
          fc.constant(items),
          fc.shuffledSubarray(items, { minLength: items.length, maxLength: items.length }),
        ),
      );
    const fetchOf = (i: { day: number; source: string | undefined; at: number }) =>
      pushFetchOfItem(
        {
          object: 'weight',
          userId: 'u',
          activityDate: new Date(Date.UTC(2026, 2, 1 + i.day)).toISOString(),
          ...(i.source ? { source: i.source } : {}),
        },
        'org',
        { ...timing, now: NOW + i.at },
      );
    const byBucket = (fetches: PushFetchInput[]) =>
      [...fetches].sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
    fc.assert(
      fc.property(itemsAndOrder, ([items, shuffled]) => {
        expect(byBucket(coalescePushFetches(shuffled.map(fetchOf)))).toEqual(
          byBucket(coalescePushFetches(items.map(fetchOf))),
        );
      }),
    );
  });

  it('keeps every merged activity fetch at one list request, covering each of its items, whatever the dates', () => {
    const DAY = 86_400_000;
    // Any instant from the year 1000 to 2100: bad device clocks and forged bodies included.
    const instant = fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(2100, 0, 1) });
    const nearNow = fc.integer({ min: NOW - 400 * DAY, max: NOW + 3 * DAY });
    fc.assert(
      fc.property(fc.array(fc.oneof(instant, nearNow), { minLength: 1, maxLength: 40 }), (dates) => {
        const items = dates.map((ms) =>
          pushFetchOfItem(
            { object: 'weight', userId: 'u', activityDate: new Date(ms).toISOString() },
            'org',
            timing,
          ),
        );
        const fetches = coalescePushFetches(items);
        for (const f of fetches) {
          expect(activityRequests(Date.parse(f.rangeStart!), Date.parse(f.rangeEnd!))).toBe(1);
        }
        for (const ms of dates) {
          const at = clampAnnouncedDate(ms, NOW);
          const covering = fetches.filter(
            (f) => Date.parse(f.rangeStart!) <= at && at <= Date.parse(f.rangeEnd!),
          );
          expect(covering).toHaveLength(1);
        }
        // At most one fetch per bucket of the year and two days the clamp leaves.
        expect(fetches.length).toBeLessThanOrEqual(Math.ceil((368 * DAY) / (28 * DAY)) + 1);
      }),
    );
  });
});

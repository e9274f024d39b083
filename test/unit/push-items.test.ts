/** Reading push notification bodies: the sandbox's shape and the variants the spec leaves possible. */
import { describe, expect, it } from 'vitest';
import { extractPushItems, parseRetrievalPath } from '../../src/push/push-items.ts';

describe('extractPushItems', () => {
  it("reads the provider's documented shape: _id is the user, activity_date and source", () => {
    const body = {
      data: [
        {
          _id: '51552cd7fded0807c4000017',
          activity_type: 'fitness',
          activity_date: '2013-10-08T19:07:01+00:00',
          source: 'sample_app',
        },
        { _id: 'u2', activity_type: 'Biometric', activity_date: '2013-10-08T21:07:01+02:00', source: 'x' },
      ],
    };
    expect(extractPushItems(body)).toEqual({
      items: [
        {
          object: 'fitness',
          userId: '51552cd7fded0807c4000017',
          activityDate: '2013-10-08T19:07:01.000Z',
          source: 'sample_app',
        },
        { object: 'biometrics', userId: 'u2', activityDate: '2013-10-08T19:07:01.000Z', source: 'x' },
      ],
      problems: [],
      listed: 2,
    });
  });

  it('reports documented items it cannot use', () => {
    const result = extractPushItems({
      data: [
        { _id: 'u', activity_type: 'steps', activity_date: '2013-10-08T19:07:01+00:00' },
        { _id: 'u', activity_type: 'sleep', activity_date: 'last tuesday' },
      ],
    });
    expect(result.items).toEqual([]);
    expect(result.problems).toEqual([
      'item 0: activity_type "steps" is not a legacy object',
      'item 1: activity_date is not a timestamp',
    ]);
  });

  it('gives documented items the same checks as the other shapes: a bad one costs only itself', () => {
    const good = Array.from({ length: 50 }, (_, i) => ({
      _id: `u${i}`,
      activity_type: 'weight',
      activity_date: '2026-03-15T08:00:00+00:00',
      source: 'scale',
    }));
    const bad = [
      { _id: 'bad\u0000user', activity_type: 'weight', activity_date: '2026-03-15T08:00:00Z' },
      { _id: '..', activity_type: 'weight', activity_date: '2026-03-15T08:00:00Z' },
      { _id: 'u', activity_type: 'weight', activity_date: '2026-03-15T08:00:00Z', source: 'app\u0000' },
      {
        _id: 'u',
        activity_type: 'weight',
        activity_date: '2026-03-15T08:00:00Z',
        organization_id: 'o\u0001x',
      },
      { _id: 'x'.repeat(2000), activity_type: 'weight', activity_date: '2026-03-15T08:00:00Z' },
    ];
    const result = extractPushItems({ data: [...good.slice(0, 25), ...bad, ...good.slice(25)] });
    expect(result.items.map((i) => i.userId)).toEqual(good.map((g) => g._id));
    expect(result.listed).toBe(55);
    expect(result.problems).toEqual([
      'item 25: the user id "bad\\u0000user" cannot be used in a URL path: it holds control characters',
      'item 26: the user id ".." cannot be used in a URL path: it is the dot-segment ".."',
      'item 27: the source "app\\u0000" holds control characters',
      'item 28: the organization id "o\\u0001x" holds control characters',
      `item 29: the user id "${'x'.repeat(80)}" cannot be used in a URL path: it is longer than 1024 characters`,
    ]);
    // The reasons hold no raw control character (they are stored in a text column).
    expect(result.problems.join('')).not.toMatch(/[\u0000-\u001f]/);
  });

  it('keeps partner-side sync and disconnect notifications as announcing nothing, not as errors', () => {
    for (const type of ['sync', 'disconnect']) {
      const result = extractPushItems({
        data: {
          type,
          message: 'Confirmed',
          third_party: 'ACME',
          connected_third_parties: [],
          user: { _id: 'u', uid: 'c' },
        },
      });
      expect(result.items).toEqual([]);
      expect(result.problems).toEqual([
        `item 0: a partner-side ${type} notification (kept; it announces no data to fetch)`,
      ]);
    }
  });

  it('reads the sandbox shape', () => {
    const body = {
      notifications: [
        {
          object: 'fitness',
          _id: 'rec1',
          user_id: 'user1',
          uid: 'u-1',
          organization_id: 'org1',
          last_updated: '2026-03-15T12:00:00Z',
          url: '/v1/organizations/org1/users/user1/fitness/rec1.json',
        },
      ],
    };
    expect(extractPushItems(body)).toEqual({
      items: [
        {
          object: 'fitness',
          recordId: 'rec1',
          userId: 'user1',
          organizationId: 'org1',
          lastUpdated: '2026-03-15T12:00:00.000Z',
        },
      ],
      problems: [],
      listed: 1,
    });
  });

  it('accepts data, a bare array, type/id fields and a retrieval url alone', () => {
    expect(extractPushItems({ data: [{ type: 'Routine', id: 7, user: { _id: 'u' } }] }).items).toEqual([
      { object: 'routine', recordId: '7', userId: 'u' },
    ]);
    expect(
      extractPushItems([{ url: 'https://api.validic.com/v1/organizations/o/users/u/sleep/r9.json?x=1' }])
        .items,
    ).toEqual([{ object: 'sleep', recordId: 'r9', userId: 'u', organizationId: 'o' }]);
    expect(
      extractPushItems({ data: { object: 'weight', last_updated: '2026-03-15T12:00:00.000-05:00' } }).items,
    ).toEqual([{ object: 'weight', lastUpdated: '2026-03-15T17:00:00.000Z' }]);
    expect(
      extractPushItems({ object: 'biometric', path: '/v1/organizations/o/biometrics/latest.json' }).items,
    ).toEqual([{ object: 'biometrics', organizationId: 'o' }]);
  });

  it('drops repeats and reports what it cannot use', () => {
    const item = { object: 'fitness', _id: 'a', user_id: 'u' };
    const result = extractPushItems({ notifications: [item, item, 'junk', { type: 'disconnect' }] });
    expect(result.items).toHaveLength(1);
    expect(result.problems).toEqual([
      'item 2 is not an object',
      'item 3: no legacy object ("disconnect" is not one)',
    ]);
  });

  it('finds nothing in bodies of unknown shape', () => {
    for (const body of [null, 42, 'text', { hello: 'world' }, { notifications: [] }]) {
      expect(extractPushItems(body).items).toEqual([]);
      expect(extractPushItems(body).problems.length).toBeGreaterThan(0);
    }
  });
});

describe('parseRetrievalPath', () => {
  it('reads org, user, object and record, and ignores what is not a path', () => {
    expect(parseRetrievalPath('/v1/organizations/o/users/u/fitness/r.json')).toEqual({
      organizationId: 'o',
      userId: 'u',
      object: 'fitness',
      recordId: 'r',
    });
    expect(parseRetrievalPath('/v1/fitness/latest.json')).toEqual({ object: 'fitness' });
    expect(parseRetrievalPath(undefined)).toEqual({});
  });
});

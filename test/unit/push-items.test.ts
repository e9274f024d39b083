/** Reading push notification bodies: the sandbox's shape and the variants the spec leaves possible. */
import { describe, expect, it } from 'vitest';
import { extractPushItems, parseRetrievalPath } from '../../src/push/push-items.ts';

describe('extractPushItems', () => {
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

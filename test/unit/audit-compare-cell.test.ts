/**
 * compareCell and cellOutcome (src/audit/compare-cell.ts): what the platform returned for a cell against
 * the warehouse's current versions and its live records of the window's inner days.
 */
import { describe, expect, it } from 'vitest';
import { type CellComparison, cellOutcome, compareCell } from '../../src/audit/compare-cell.ts';
import type { AuditVersion } from '../../src/warehouse/audits.ts';

const T1 = '2026-05-01T10:00:00.000Z';
const T2 = '2026-05-02T10:00:00.000Z';
const T3 = '2026-05-03T10:00:00.000Z';
const DELETED_AT = '2026-05-04T00:00:00.000Z';

const version = (
  id: string,
  checksum: string,
  createdAt: string,
  deletedAt: string | null = null,
): AuditVersion => ({ id, checksum, createdAt, deletedAt });

const stored = (...versions: AuditVersion[]) => new Map(versions.map((v) => [v.id, v]));

describe('compareCell', () => {
  it('counts a version held at the same checksum and deletedness as equal', () => {
    const a = version('a', 'c1', T1);
    const b = version('b', 'c2', T2, DELETED_AT);
    const result = compareCell([a, b], stored(a, { ...b }), ['a']);
    expect(result).toEqual({ equal: 2, missing: [], stale: [], extra: [] });
  });

  it('ignores created_at and the deleted_at timestamp itself when checksum and deletedness agree', () => {
    // Same checksum, the warehouse's created_at earlier, and deleted at another instant: still the same version.
    const platform = version('a', 'c1', T2, DELETED_AT);
    const held = version('a', 'c1', T1, '2026-05-09T00:00:00.000Z');
    expect(compareCell([platform], stored(held), [])).toEqual({
      equal: 1,
      missing: [],
      stale: [],
      extra: [],
    });
  });

  it('reports a version the warehouse does not hold as missing', () => {
    const a = version('a', 'c1', T1);
    const b = version('b', 'c2', T1);
    const result = compareCell([a, b], stored(a), ['a']);
    expect(result.equal).toBe(1);
    expect(result.missing).toEqual([b]);
    expect(result.stale).toEqual([]);
    expect(result.extra).toEqual([]);
  });

  it('reports another checksum with an older warehouse created_at as stale', () => {
    const platform = version('a', 'new', T2);
    const result = compareCell([platform], stored(version('a', 'old', T1)), ['a']);
    expect(result).toEqual({ equal: 0, missing: [], stale: [platform], extra: [] });
  });

  it('reports another checksum at the same created_at as stale (only a strictly later one is ahead)', () => {
    const platform = version('a', 'aaa', T2);
    const result = compareCell([platform], stored(version('a', 'zzz', T2)), []);
    expect(result.stale).toEqual([platform]);
    expect(result.equal).toBe(0);
  });

  it('reports a record deleted on the platform but live in the warehouse as stale', () => {
    const platform = version('a', 'c1', T1, DELETED_AT);
    const result = compareCell([platform], stored(version('a', 'c1', T1)), ['a']);
    // A deleted record is still "returned" by the platform: not extra, but stale (the delete was lost).
    expect(result).toEqual({ equal: 0, missing: [], stale: [platform], extra: [] });
  });

  it('reports a deleted record revived on the platform (warehouse deleted, platform not) as stale', () => {
    const platform = version('a', 'c1', T1);
    const result = compareCell([platform], stored(version('a', 'c1', T1, DELETED_AT)), []);
    expect(result).toEqual({ equal: 0, missing: [], stale: [platform], extra: [] });
  });

  it('counts the warehouse ahead (strictly later created_at) as equal, whatever differs', () => {
    const platform = version('a', 'old', T1);
    expect(compareCell([platform], stored(version('a', 'new', T2)), ['a']).equal).toBe(1);
    // Ahead also when the later warehouse version is a delete the platform does not show yet.
    const ahead = compareCell([platform], stored(version('a', 'old', T2, DELETED_AT)), []);
    expect(ahead).toEqual({ equal: 1, missing: [], stale: [], extra: [] });
  });

  it('reports live warehouse records of the inner days the platform did not return as extra', () => {
    const a = version('a', 'c1', T1);
    const result = compareCell([a], stored(a), ['a', 'x', 'y']);
    expect(result).toEqual({ equal: 1, missing: [], stale: [], extra: ['x', 'y'] });
  });

  it('does not report an id returned only as a deleted version as extra', () => {
    const platform = version('a', 'c1', T1, DELETED_AT);
    const result = compareCell([platform], stored(platform), ['a']);
    expect(result.extra).toEqual([]);
    expect(result.equal).toBe(1);
  });

  it('an empty cell on both sides compares as nothing at all', () => {
    expect(compareCell([], new Map(), [])).toEqual({ equal: 0, missing: [], stale: [], extra: [] });
  });

  describe('several platform versions of one id: the newest decides', () => {
    it('equal when the newest matches, whatever the older ones', () => {
      const older = version('a', 'c1', T1);
      const newest = version('a', 'c2', T2);
      const held = version('a', 'c2', T2);
      for (const order of [
        [older, newest],
        [newest, older],
      ]) {
        expect(compareCell(order, stored(held), ['a'])).toEqual({
          equal: 1,
          missing: [],
          stale: [],
          extra: [],
        });
      }
    });

    it('stale when an older one matches but the newest does not', () => {
      const older = version('a', 'c1', T1);
      const newest = version('a', 'c2', T3);
      const held = version('a', 'c1', T1);
      for (const order of [
        [older, newest],
        [newest, older],
      ]) {
        const result = compareCell(order, stored(held), ['a']);
        expect(result.stale).toEqual([newest]);
        expect(result.equal).toBe(0);
      }
    });

    it('missing reports the newest version once per id', () => {
      const versions = [version('a', 'c1', T1), version('a', 'c3', T3), version('a', 'c2', T2)];
      const result = compareCell(versions, new Map(), []);
      expect(result.missing).toEqual([versions[1]]);
    });

    it('at the same created_at, the higher checksum is the newest; then the deleted one', () => {
      const low = version('a', 'aaa', T1);
      const high = version('a', 'bbb', T1);
      expect(compareCell([high, low], stored(high), []).equal).toBe(1);
      expect(compareCell([low, high], stored(low), []).stale).toEqual([high]);

      const live = version('a', 'c1', T1);
      const deleted = version('a', 'c1', T1, DELETED_AT);
      // The delete wins: the warehouse holding the live version is stale, in either order.
      expect(compareCell([deleted, live], stored(live), []).stale).toEqual([deleted]);
      expect(compareCell([live, deleted], stored(live), []).stale).toEqual([deleted]);
      expect(compareCell([live, deleted], stored(deleted), []).equal).toBe(1);
    });

    it('counts each id once across equal, missing and stale', () => {
      const platform = [
        version('a', 'c1', T1),
        version('a', 'c2', T2),
        version('b', 'c1', T1),
        version('b', 'c2', T2),
        version('c', 'c1', T1),
        version('c', 'c1', T1),
      ];
      const result = compareCell(platform, stored(version('a', 'c2', T2), version('b', 'c1', T1)), [
        'a',
        'b',
        'z',
      ]);
      expect(result.equal).toBe(1);
      expect(result.stale.map((v) => v.id)).toEqual(['b']);
      expect(result.missing.map((v) => v.id)).toEqual(['c']);
      expect(result.extra).toEqual(['z']);
    });
  });
});

describe('cellOutcome', () => {
  const none: CellComparison<AuditVersion> = { equal: 0, missing: [], stale: [], extra: [] };

  it('complete when nothing is missing, stale or extra (any number equal, even none)', () => {
    expect(cellOutcome(none)).toBe('complete');
    expect(cellOutcome({ ...none, equal: 12 })).toBe('complete');
  });

  it('drift when anything is missing, stale or extra', () => {
    const v = version('a', 'c1', T1);
    expect(cellOutcome({ ...none, equal: 3, missing: [v] })).toBe('drift');
    expect(cellOutcome({ ...none, equal: 3, stale: [v] })).toBe('drift');
    expect(cellOutcome({ ...none, equal: 3, extra: ['x'] })).toBe('drift');
  });

  it('classifies compareCell results end to end', () => {
    const a = version('a', 'c1', T1);
    expect(cellOutcome(compareCell([a], stored(a), ['a']))).toBe('complete');
    expect(cellOutcome(compareCell([a], stored(a), ['a', 'b']))).toBe('drift');
    expect(cellOutcome(compareCell([a], new Map(), []))).toBe('drift');
    expect(cellOutcome(compareCell([a], stored(version('a', 'c0', T1)), []))).toBe('drift');
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTimestamp } from '../../src/normalize/parse-helpers.ts';

describe('parseTimestamp', () => {
  it.each([
    ['2024-03-01T08:00:00Z', '2024-03-01T08:00:00.000Z'],
    ['2017-11-28T15:49:35.700Z', '2017-11-28T15:49:35.700Z'],
    // legacy form with milliseconds and an offset
    ['2024-05-01T10:00:00.000-04:00', '2024-05-01T14:00:00.000Z'],
    ['2024-05-01T10:00:00+05:30', '2024-05-01T04:30:00.000Z'],
    ['2024-05-01T10:00:00+0530', '2024-05-01T04:30:00.000Z'],
    ['2024-05-01 10:00:00', '2024-05-01T10:00:00.000Z'],
    ['2024-05-01T10:00:00.123456Z', '2024-05-01T10:00:00.123Z'],
    ['2024-05-01', '2024-05-01T00:00:00.000Z'],
  ])('%s → %s', (input, expected) => {
    expect(parseTimestamp(input)).toBe(expected);
  });

  it.each([
    '',
    'yesterday',
    '2024-13-01T00:00:00Z',
    '2024-02-30T00:00:00Z',
    '2024-01-01T25:00:00Z',
    '0000-01-01T00:00:00Z',
    '1700000000',
  ])('rejects %j', (input) => {
    expect(parseTimestamp(input)).toBeNull();
  });

  it('round-trips any instant written in either accepted form', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('1970-01-01T00:00:00Z'),
          max: new Date('2099-12-31T23:59:59Z'),
          noInvalidDate: true,
        }),
        fc.integer({ min: -12 * 60, max: 14 * 60 }).map((m) => m - (m % 15)),
        (date, offsetMinutes) => {
          const iso = date.toISOString();
          expect(parseTimestamp(iso.replace('.000Z', 'Z'))).toBe(iso);
          const local = new Date(date.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 23);
          const sign = offsetMinutes < 0 ? '-' : '+';
          const abs = Math.abs(offsetMinutes);
          const zone = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          expect(parseTimestamp(`${local}${zone}`)).toBe(iso);
        },
      ),
    );
  });
});

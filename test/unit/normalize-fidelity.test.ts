/**
 * Records exactly as the platform sent them, as normalizer properties: a metric that cannot be read
 * is left out and named, never the good ones and never silently, the same way for every record type
 * and at every level (record, segment, food); numbers are read by the JSON grammar only (a string
 * holding exactly a JSON number is one, anything else is not); numbers a double would change stay
 * exact in `raw` and in the stored metric.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeItem, normalizeLegacyRecord } from '../../src/normalize/normalize-item.ts';
import { normalizeRecord } from '../../src/normalize/normalize-record.ts';
import type { NormalizedRecord } from '../../src/normalize/normalized-types.ts';
import { readJsonNumber } from '../../src/normalize/parse-helpers.ts';
import { parseJsonExactly } from '../../src/pipeline/exact-json.ts';
import { rawLegacyRecord, rawRecord } from '../helpers/fixtures/index.ts';

/** Values of a metric that are numbers: JSON numbers, and strings holding exactly one. */
const readable = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.constantFrom('61.5', '61.50', '1e3', '1E+2', '-0.25', '0', '12345678901234567890'),
);

/** Values that are not numbers by the JSON grammar, or not within double precision. */
const unreadable = fc.constantFrom<unknown>(
  'n/a',
  '0x1A',
  ' 61.5',
  '61.5 ',
  'Infinity',
  '-Infinity',
  'NaN',
  '',
  '1_000',
  '+1',
  '.5',
  '5.',
  '0b1',
  '1e400',
  '-1e400',
  '1e-400',
  true,
  {},
  [72],
);

const TYPES = ['measurement', 'nutrition', 'intraday', 'summary', 'workout', 'sleep', 'cgm', 'something_new'];

type Slot = { ok: true; value: unknown } | { ok: false; metric: unknown; why: string };

/** One metric of a list: readable, or one of the ways a metric cannot be read. */
const slot: fc.Arbitrary<Slot> = fc.oneof(
  readable.map((value): Slot => ({ ok: true, value })),
  unreadable.map((value): Slot => ({ ok: false, metric: { type: 'm', unit: 'u', value }, why: '.value: ' })),
  fc
    .constantFrom('not a metric', 7, null)
    .map((metric): Slot => ({ ok: false, metric, why: ': not an object' })),
  fc.constant<Slot>({ ok: false, metric: { unit: 'u', value: 1 }, why: '.type: ' }),
);

const metricOf = (s: Slot, i: number) =>
  s.ok ? { type: `m${i}`, origin: 'device', unit: 'u', value: s.value } : s.metric;

/** The JSON a value is stored as, in records.metrics: a number's text exactly as sent. */
const storedAs = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function expectMetrics(
  rows: { metricIndex: number; type: string; value: unknown }[],
  bad: string[],
  slots: Slot[],
  path: string,
) {
  expect(rows.map((m) => [m.metricIndex, m.type, JSON.stringify(m.value)])).toEqual(
    slots.flatMap((s, i) => (s.ok ? [[i, `m${i}`, storedAs(s.value)]] : [])),
  );
  const named = bad.filter((b) => b.startsWith(`${path}[`));
  expect(named).toHaveLength(slots.filter((s) => !s.ok).length);
  slots.forEach((s, i) => {
    if (!s.ok)
      expect(
        named.some((b) => b.startsWith(`${path}[${i}]${s.why}`)),
        `${path}[${i}]`,
      ).toBe(true);
  });
}

describe('a metric that cannot be read', () => {
  it('is left out and named, never the good ones and never silently, for every type and level', () => {
    fc.assert(
      fc.property(fc.constantFrom(...TYPES), fc.array(slot, { maxLength: 6 }), (type, slots) => {
        const metrics = slots.map(metricOf);
        const nested =
          type === 'nutrition' ? [{ name: 's', metrics, food: [{ name: 'f', metrics }] }] : undefined;
        const result = normalizeRecord(rawRecord(type, { metrics, ...(nested ? { segments: nested } : {}) }));
        expect(result.ok).toBe(true);
        if (!result.ok) return;
        const n: NormalizedRecord = result.value;
        // A plain metric of an intraday record has a value and no points: an unreadable value there is
        // the metric's; null (absent) is an empty series, not a metric.
        expectMetrics(n.metrics, n.badValues, slots, 'metrics');
        if (type === 'nutrition') {
          expectMetrics(n.segmentMetrics, n.badValues, slots, 'segments[0].metrics');
          expectMetrics(n.foodMetrics, n.badValues, slots, 'segments[0].food[0].metrics');
        }
        expect(n.intraday).toEqual([]);
        // raw keeps every metric, the unreadable ones included.
        expect(JSON.parse(n.record.raw).metrics).toHaveLength(slots.length);
      }),
      { numRuns: 400 },
    );
  });

  it('is loaded with a reason for the loader to file (kind bad_values), never quarantining the record', () => {
    const raw = rawRecord('measurement', {
      metrics: [
        { type: 'systolic', unit: 'mmHg', value: 120 },
        { type: 'diastolic', unit: 'mmHg', value: 'n/a' },
        { type: 'pulse', unit: 'bpm', value: 61 },
      ],
    });
    const n = normalizeItem({ kind: 'record', raw });
    expect(n.kind).toBe('record');
    if (n.kind !== 'record') return;
    expect(n.value.metrics.map((m) => `${m.type}=${m.value}`)).toEqual(['systolic=120', 'pulse=61']);
    expect(n.value.badValues).toEqual(['metrics[1].value: not a number: "n/a"']);
  });
});

describe('numbers are read by the JSON grammar only', () => {
  it('a string is a number exactly when it holds one JSON number, within double precision', () => {
    for (const text of ['0', '-0', '61.5', '61.50', '1e3', '1E+2', '-2.5e-3', '12345678901234567890'])
      expect(readJsonNumber(text), text).toMatchObject({ ok: true, double: Number(text) });
    for (const text of [
      '0x1A',
      '1_000',
      '+1',
      '.5',
      '5.',
      ' 1',
      '1 ',
      '',
      'Infinity',
      'NaN',
      '1e400',
      '1e-400',
      '０',
    ])
      expect(readJsonNumber(text).ok, text).toBe(false);
  });

  it('the same rule for a legacy record: an unreadable number of a typed field is named', () => {
    const r = normalizeLegacyRecord(
      'fitness',
      rawLegacyRecord({ _id: 'f1', distance: '1200.5', duration: '0x1A', calories: 'n/a' }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.badValues).toEqual(['duration: not a number: "0x1A"', 'calories: not a number: "n/a"']);
  });
});

describe('numbers a double would change', () => {
  const text = `{"id":12345678901234567890,"type":"measurement","checksum":"c1","created_at":"2024-03-01T08:00:01Z",
    "metrics":[{"type":"count","unit":"n","value":12345678901234567890},{"type":"w","unit":"kg","value":70.50},
    {"type":"s","unit":"n","value":"98765432109876543210"}],"extra":{"ratio":1e-7,"exact":0.1000000000000000055511151231257827}}`;

  it('stay exact in raw, in the id and in the stored metric', () => {
    const n = normalizeRecord(parseJsonExactly(text));
    expect(n.ok).toBe(true);
    if (!n.ok) return;
    expect(n.value.record.id).toBe('12345678901234567890');
    expect(n.value.record.raw).toContain('"value":12345678901234567890');
    expect(n.value.record.raw).toContain('"value":70.50');
    expect(n.value.record.raw).toContain(
      '"extra":{"ratio":1e-7,"exact":0.1000000000000000055511151231257827}',
    );
    expect(n.value.metrics.map((m) => JSON.stringify(m.value))).toEqual([
      '12345678901234567890',
      '70.50',
      '98765432109876543210',
    ]);
  });

  it('a number no PostgreSQL numeric can hold quarantines the record with its reason', () => {
    const n = normalizeRecord(parseJsonExactly(text.replace('1e-7', '1e-20000')));
    expect(n.ok).toBe(false);
    if (n.ok) return;
    expect(n.quarantine.reason).toBe('contains a number PostgreSQL cannot store exactly (1e-20000)');
    expect(n.quarantine.raw).toContain('1e-20000');
  });
});

describe('every kind keeps its numbers as sent', () => {
  it('a user, a connection event and a legacy record store raw with their numbers exact', () => {
    const user = normalizeItem({
      kind: 'user',
      raw: parseJsonExactly(
        '{"uid":"u1","id":"s1","marketplace":{"token":"secret-1"},"score":12345678901234567890}',
      ),
    });
    expect(user.kind).toBe('user');
    if (user.kind === 'user')
      expect(user.value.raw).toBe(
        '{"uid":"u1","id":"s1","marketplace":{"token":"[REDACTED]"},"score":12345678901234567890}',
      );
    const event = normalizeItem({
      kind: 'connection_event',
      raw: parseJsonExactly('{"id":98765432109876543210,"action":"create","profile":{"weight":70.50}}'),
    });
    expect(event).toMatchObject({
      kind: 'connection_event',
      value: { id: '98765432109876543210', profile: '{"weight":70.50}' },
    });
    const legacy = normalizeItem({
      kind: 'legacy',
      object: 'routine',
      raw: parseJsonExactly('{"_id":"l1","steps":12345678901234567890,"distance":"1200.50"}'),
    });
    expect(legacy.kind).toBe('legacy');
    if (legacy.kind === 'legacy') {
      expect(legacy.value.raw).toBe('{"_id":"l1","steps":12345678901234567890,"distance":"1200.50"}');
      expect(legacy.value.badValues).toEqual([]);
    }
  });
});

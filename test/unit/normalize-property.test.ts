import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeItem } from '../../src/normalize/normalize-item.ts';
import type { RawItem } from '../../src/pipeline/batch.ts';

const metric = fc.record({
  type: fc.constantFrom('body_weight', 'bmi', 'steps', 'energy_consumed'),
  origin: fc.constantFrom('device', 'manual', 'unknown'),
  unit: fc.constantFrom('kg', 'kcal', 'steps'),
  value: fc.double({ noNaN: true, noDefaultInfinity: true }),
});

/** Valid v2 records built from the spec's field table. */
const validRecord = fc.record({
  version: fc.constant('1.0'),
  id: fc.string({ minLength: 1, maxLength: 24 }),
  checksum: fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 8, maxLength: 32 }),
  type: fc.constantFrom('measurement', 'measurements', 'nutrition', 'intraday', 'summary', 'cgm', 'zzz'),
  start_time: fc
    .date({ min: new Date('2000-01-01'), max: new Date('2090-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  utc_offset: fc.integer({ min: -50400, max: 50400 }),
  offset_origin: fc.constantFrom('source', 'profile', 'user_defined'),
  user: fc.record({ uid: fc.string({ minLength: 1 }), user_id: fc.string(), organization_id: fc.string() }),
  source: fc.record({
    type: fc.string(),
    device: fc.option(fc.record({ name: fc.string(), type: fc.string() })),
  }),
  metrics: fc.array(metric, { maxLength: 4 }),
  created_at: fc
    .date({ min: new Date('2000-01-01'), max: new Date('2090-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  deleted_at: fc.constant(null),
  tags: fc.constant([]),
  user_notes: fc.constant([]),
});

describe('normalization properties', () => {
  it('never throws, whatever the input, and always says what it did', () => {
    const anyItem: fc.Arbitrary<RawItem> = fc.oneof(
      fc.record({ kind: fc.constant('record' as const), raw: fc.jsonValue() }),
      fc.record({ kind: fc.constant('frame' as const), raw: fc.jsonValue() }),
      fc.record({ kind: fc.constant('user' as const), raw: fc.jsonValue() }),
      fc.record({ kind: fc.constant('connection_event' as const), raw: fc.jsonValue() }),
      fc.record({ kind: fc.constant('legacy' as const), object: fc.string(), raw: fc.jsonValue() }),
      fc.record({
        kind: fc.constant('record' as const),
        raw: validRecord.chain((r) => fc.constantFrom(r, { ...r, metrics: 'x' }, { ...r, created_at: 7 })),
      }),
    );
    fc.assert(
      fc.property(anyItem, (item) => {
        const n = normalizeItem(item);
        if (n.kind === 'quarantine') {
          expect(n.value.reason.length).toBeGreaterThan(0);
          expect(typeof n.value.raw).toBe('string');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('every valid record normalizes, keeps its raw JSON and one row per metric', () => {
    fc.assert(
      fc.property(validRecord, (raw) => {
        const n = normalizeItem({ kind: 'record', raw });
        expect(n.kind).toBe('record');
        if (n.kind !== 'record') return;
        expect(n.value.record.id).toBe(raw.id);
        expect(n.value.record.type).toBe(raw.type === 'measurements' ? 'measurement' : raw.type);
        expect(JSON.parse(n.value.record.raw)).toEqual(JSON.parse(JSON.stringify(raw)));
        expect(n.value.metrics.length + n.value.intraday.length).toBe(raw.metrics.length);
        expect(Date.parse(n.value.record.createdAt)).toBe(Date.parse(raw.created_at));
      }),
      { numRuns: 300 },
    );
  });
});

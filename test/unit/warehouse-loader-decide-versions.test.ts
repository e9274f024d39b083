/**
 * decideVersions, the records loader's pure heart, as properties and without PostgreSQL: the loads are
 * simulated on a model of `records` (the current version per id) and `record_versions` (a set of
 * (id, checksum)), doing what load-records.ts does with a decision.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BatchVersion,
  decideVersions,
  isNewerVersion,
  type StoredVersion,
  type VersionDecision,
  versionKey,
} from '../../src/warehouse/loader/decide-versions.ts';

const IDS = ['r1', 'r2', 'r3'] as const;
const CHECKSUMS = ['a', 'b', 'c', 'd'] as const;
const time = (day: number) => `2024-05-0${day}T00:00:00.000Z`;

/**
 * The distinct versions a scenario delivers: per (id, checksum) one created_at (few days, so ties
 * between checksums happen), and the same version with `deleted_at` or without (the platform's
 * checksum need not cover it).
 */
const versionPool = fc
  .tuple(
    fc.array(fc.integer({ min: 1, max: 3 }), {
      minLength: IDS.length * CHECKSUMS.length,
      maxLength: IDS.length * CHECKSUMS.length,
    }),
    fc.uniqueArray(
      fc.record({
        id: fc.nat(IDS.length - 1),
        checksum: fc.nat(CHECKSUMS.length - 1),
        deleted: fc.boolean(),
      }),
      { minLength: 1, maxLength: 10, selector: (v) => `${v.id}/${v.checksum}/${v.deleted}` },
    ),
  )
  .map(([days, picks]) =>
    picks.map(
      (p): BatchVersion => ({
        id: IDS[p.id]!,
        checksum: CHECKSUMS[p.checksum]!,
        createdAt: time(days[p.id * CHECKSUMS.length + p.checksum]!),
        deletedAt: p.deleted ? '2024-06-01T00:00:00.000Z' : null,
      }),
    ),
  );

/** The pool delivered in any order, some versions more than once, cut into batches of any sizes. */
const scenario = versionPool.chain((versions) =>
  fc.array(fc.constantFrom(...versions), { maxLength: 8 }).chain((extras) => {
    const all = [...versions, ...extras];
    return fc.record({
      versions: fc.constant(versions),
      deliveries: fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }),
      cuts: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 10 }),
    });
  }),
);

function batches<T>(items: readonly T[], cuts: readonly number[]): T[][] {
  const out: T[][] = [];
  for (let i = 0, c = 0; i < items.length; c += 1) {
    const size = cuts[c % cuts.length]!;
    // Copies: a redelivered version is an equal object, not the same one.
    out.push(items.slice(i, i + size).map((v) => ({ ...v })));
    i += size;
  }
  return out;
}

/** `records` (current version per id) and `record_versions` ((id, checksum) keys). */
interface Model {
  current: Map<string, StoredVersion>;
  archive: Set<string>;
}

/** One load on the model: the probe, the decision, then the writes load-records.ts makes of it. */
function load(model: Model, batch: readonly BatchVersion[]): VersionDecision<BatchVersion> {
  const stored = new Map<string, StoredVersion | null>();
  const archivedKeys = new Set<string>();
  for (const v of batch) {
    stored.set(v.id, model.current.get(v.id) ?? null);
    if (model.archive.has(versionKey(v.id, v.checksum))) archivedKeys.add(versionKey(v.id, v.checksum));
  }
  const decision = decideVersions(batch, stored, archivedKeys);
  for (const id of decision.replacedIds) {
    model.archive.add(versionKey(id, model.current.get(id)!.checksum));
  }
  for (const v of decision.toArchive) {
    // The decision never archives a version twice (the insert's ON CONFLICT DO NOTHING is a safety net).
    expect(model.archive.has(versionKey(v.id, v.checksum))).toBe(false);
    model.archive.add(versionKey(v.id, v.checksum));
  }
  for (const v of decision.toApply) {
    model.current.set(v.id, { checksum: v.checksum, createdAt: v.createdAt, deletedAt: v.deletedAt ?? null });
  }
  return decision;
}

const emptyModel = (): Model => ({ current: new Map(), archive: new Set() });

/** What a version looks like once current, for comparisons: its checksum and whether it is deleted. */
const shape = (v: StoredVersion | BatchVersion | undefined) =>
  v ? `${v.checksum}${v.deletedAt ? ' (deleted)' : ''}` : undefined;

/** The expected end state: per id the newest version delivered; every other distinct (id, checksum) archived. */
function expected(versions: readonly BatchVersion[]) {
  const newest = new Map<string, BatchVersion>();
  for (const v of versions) {
    const best = newest.get(v.id);
    if (!best || isNewerVersion(v, best)) newest.set(v.id, v);
  }
  const archive = new Set<string>();
  for (const v of versions)
    if (newest.get(v.id)!.checksum !== v.checksum) archive.add(versionKey(v.id, v.checksum));
  return {
    current: Object.fromEntries([...newest].map(([id, v]) => [id, shape(v)])),
    archive: [...archive].sort(),
  };
}

const endState = (model: Model) => ({
  current: Object.fromEntries([...model.current].map(([id, v]) => [id, shape(v)])),
  archive: [...model.archive].sort(),
});

describe('decideVersions', () => {
  it('any order, repetition and batching of the same versions ends in the same current versions and archive', () => {
    fc.assert(
      fc.property(scenario, ({ versions, deliveries, cuts }) => {
        const model = emptyModel();
        for (const batch of batches(deliveries, cuts)) load(model, batch);
        expect(endState(model)).toEqual(expected(versions));
        // And again: a second delivery of everything changes nothing.
        const again = load(model, deliveries);
        expect(again.toApply).toEqual([]);
        expect(again.toArchive).toEqual([]);
        expect(endState(model)).toEqual(expected(versions));
      }),
      { numRuns: 500 },
    );
  });

  it('a stale version never becomes current, and the current version never goes back', () => {
    fc.assert(
      fc.property(scenario, ({ deliveries, cuts }) => {
        const model = emptyModel();
        for (const batch of batches(deliveries, cuts)) {
          const before = new Map(model.current);
          const decision = load(model, batch);
          batch.forEach((v, i) => {
            const now = model.current.get(v.id)!;
            if (decision.counts[i] === 'stale') {
              expect(now.checksum).not.toBe(v.checksum);
              expect(isNewerVersion(now, v)).toBe(true);
            }
          });
          for (const v of decision.toApply) {
            const old = before.get(v.id);
            if (old) expect(isNewerVersion(v, old)).toBe(true);
          }
          for (const [id, old] of before) expect(isNewerVersion(old, model.current.get(id)!)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a delete of the stored checksum wins unless the stored version is newer', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        (storedDay, deleteDay, withUndeletedCopy) => {
          const stored = new Map([['r1', { checksum: 'a', createdAt: time(storedDay), deletedAt: null }]]);
          const deleted = { id: 'r1', checksum: 'a', createdAt: time(deleteDay), deletedAt: time(4) };
          const undeleted = { ...deleted, deletedAt: null };
          const batch = withUndeletedCopy ? [undeleted, deleted] : [deleted];
          const d = decideVersions(batch, stored, new Set());
          const wins = deleteDay >= storedDay;
          expect(d.actions.get('r1')).toBe(wins ? 'update' : 'same');
          expect(d.toApply).toEqual(wins ? [deleted] : []);
          // In place: the stored row of the same checksum is not archived, nor is anything else.
          expect(d.replacedIds).toEqual([]);
          expect(d.toArchive).toEqual([]);
          // One item counts the update (the first of that checksum), the other one is a duplicate.
          expect([...d.counts].sort()).toEqual(
            [wins ? 'updated' : 'unchanged', ...(withUndeletedCopy ? ['unchanged'] : [])].sort(),
          );
          // The same delete again (now stored) is unchanged; the version without it does not undo it.
          if (wins) {
            const now = new Map([['r1', { checksum: 'a', createdAt: time(deleteDay), deletedAt: time(4) }]]);
            const again = decideVersions([{ ...undeleted }, { ...deleted }], now, new Set());
            expect(again.actions.get('r1')).toBe('same');
            expect(again.counts).toEqual(['unchanged', 'unchanged']);
          }
        },
      ),
    );
  });

  it('counts add up to the items: one inserted or updated per id written, each id inserted once over all loads', () => {
    fc.assert(
      fc.property(scenario, ({ versions, deliveries, cuts }) => {
        const model = emptyModel();
        let inserted = 0;
        for (const batch of batches(deliveries, cuts)) {
          const d = load(model, batch);
          expect(d.counts).toHaveLength(batch.length);
          const n = (c: string) => d.counts.filter((x) => x === c).length;
          expect(n('inserted') + n('updated') + n('unchanged') + n('stale')).toBe(batch.length);
          expect(n('inserted')).toBe(d.insertedIds.length);
          expect(n('updated')).toBe(d.updatedIds.length);
          expect(d.toApply.map((v) => v.id).sort()).toEqual([...d.insertedIds, ...d.updatedIds].sort());
          for (const id of new Set(batch.map((v) => v.id))) {
            const written = batch.filter(
              (v, i) => v.id === id && ['inserted', 'updated'].includes(d.counts[i]!),
            );
            expect(written.length).toBe(d.insertedIds.includes(id) || d.updatedIds.includes(id) ? 1 : 0);
          }
          inserted += n('inserted');
        }
        expect(inserted).toBe(new Set(versions.map((v) => v.id)).size);
      }),
      { numRuns: 300 },
    );
  });
});

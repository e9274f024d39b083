/**
 * decideVersions, the records loader's pure heart, as properties and without PostgreSQL: the loads are
 * simulated on a model of `records` (the current version per id) and `record_versions` (a set of
 * versions: id, checksum, created_at, deleted or not), doing what load-records.ts does with a decision.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BatchVersion,
  type DecideOptions,
  decideVersions,
  isNewerVersion,
  type StoredVersion,
  sameVersion,
  type VersionDecision,
  versionKey,
} from '../../src/warehouse/loader/decide-versions.ts';

const IDS = ['r1', 'r2', 'r3'] as const;
const CHECKSUMS = ['a', 'b', 'c', 'd'] as const;
const time = (day: number) => `2024-05-0${day}T00:00:00.000Z`;

/**
 * The distinct versions a scenario delivers: any (id, checksum, created_at, deleted or not), few of
 * each (so ties of created_at between checksums happen, and one checksum comes at several times and
 * with and without `deleted_at`: a delete that keeps the checksum, a revival after it).
 */
const versionPool = fc
  .uniqueArray(
    fc.record({
      id: fc.nat(IDS.length - 1),
      checksum: fc.nat(CHECKSUMS.length - 1),
      day: fc.integer({ min: 1, max: 3 }),
      deleted: fc.boolean(),
    }),
    { minLength: 1, maxLength: 10, selector: (v) => `${v.id}/${v.checksum}/${v.day}/${v.deleted}` },
  )
  .map((picks) =>
    picks.map(
      (p): BatchVersion => ({
        id: IDS[p.id]!,
        checksum: CHECKSUMS[p.checksum]!,
        createdAt: time(p.day),
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

/** `records` (current version per id) and `record_versions` (versionKey of each version kept). */
interface Model {
  current: Map<string, StoredVersion>;
  archive: Set<string>;
}

/** One load on the model: the probe, the decision, then the writes load-records.ts makes of it. */
function load(
  model: Model,
  batch: readonly BatchVersion[],
  options: DecideOptions = {},
): VersionDecision<BatchVersion> {
  const stored = new Map<string, StoredVersion | null>();
  const archivedKeys = new Set<string>();
  for (const v of batch) {
    stored.set(v.id, model.current.get(v.id) ?? null);
    if (model.archive.has(versionKey(v.id, v))) archivedKeys.add(versionKey(v.id, v));
  }
  const decision = decideVersions(batch, stored, archivedKeys, options);
  for (const id of decision.replacedIds) {
    // The replaced row is always another version than the one applied, and never kept before.
    expect(model.archive.has(versionKey(id, model.current.get(id)!))).toBe(false);
    model.archive.add(versionKey(id, model.current.get(id)!));
  }
  for (const v of decision.toArchive) {
    // The decision never archives a version twice (the insert's ON CONFLICT DO NOTHING is a safety net).
    expect(model.archive.has(versionKey(v.id, v))).toBe(false);
    model.archive.add(versionKey(v.id, v));
  }
  for (const v of decision.toUnarchive) model.archive.delete(versionKey(v.id, v));
  for (const v of decision.toApply) {
    model.current.set(v.id, { checksum: v.checksum, createdAt: v.createdAt, deletedAt: v.deletedAt ?? null });
  }
  return decision;
}

const emptyModel = (): Model => ({ current: new Map(), archive: new Set() });

/** What a version looks like once current, for comparisons: checksum, created_at and whether deleted. */
const shape = (v: StoredVersion | BatchVersion | undefined) =>
  v ? `${v.checksum} ${v.createdAt}${v.deletedAt ? ' (deleted)' : ''}` : undefined;

/** The expected end state: per id the newest version delivered; every other distinct version archived. */
function expected(versions: readonly BatchVersion[]) {
  const newest = new Map<string, BatchVersion>();
  for (const v of versions) {
    const best = newest.get(v.id);
    if (!best || isNewerVersion(v, best)) newest.set(v.id, v);
  }
  const archive = new Set<string>();
  for (const v of versions) if (!sameVersion(newest.get(v.id)!, v)) archive.add(versionKey(v.id, v));
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
              expect(sameVersion(now, v)).toBe(false);
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

  it('a delete that keeps the checksum, and a revival after it, each become current; every version is kept', () => {
    const live = { id: 'r1', checksum: 'a', createdAt: time(1), deletedAt: null };
    const deleted = { id: 'r1', checksum: 'a', createdAt: time(2), deletedAt: time(2) };
    const revived = { id: 'r1', checksum: 'a', createdAt: time(3), deletedAt: null };
    const model = emptyModel();
    expect(load(model, [live]).counts).toEqual(['inserted']);
    expect(load(model, [deleted]).counts).toEqual(['updated']);
    expect(shape(model.current.get('r1'))).toBe(shape(deleted));
    expect(load(model, [revived]).counts).toEqual(['updated']);
    expect(shape(model.current.get('r1'))).toBe(shape(revived));
    expect([...model.archive].sort()).toEqual([versionKey('r1', live), versionKey('r1', deleted)].sort());
    // Late and again: the delete and the first version are stale now, and kept once; the revival is unchanged.
    const again = load(model, [{ ...deleted }, { ...live }, { ...revived }]);
    expect(again.counts).toEqual(['stale', 'stale', 'unchanged']);
    expect(again.toArchive).toEqual([]);
    expect(shape(model.current.get('r1'))).toBe(shape(revived));
  });

  it("an audit batch takes the platform's version at the same created_at; a later stored version still wins", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CHECKSUMS),
        fc.constantFrom(...CHECKSUMS),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 3 }),
        fc.boolean(),
        (
          storedChecksum,
          platformChecksum,
          storedDeleted,
          platformDeleted,
          storedDay,
          platformDay,
          seenBefore,
        ) => {
          const stored = {
            id: 'r1',
            checksum: storedChecksum,
            createdAt: time(storedDay),
            deletedAt: storedDeleted ? time(4) : null,
          };
          const platform = {
            id: 'r1',
            checksum: platformChecksum,
            createdAt: time(platformDay),
            deletedAt: platformDeleted ? time(4) : null,
          };
          const model = emptyModel();
          load(model, [stored]);
          // The platform's version may have come before by another path, and been ranked below.
          if (seenBefore) load(model, [{ ...platform }]);
          load(model, [platform], { platformCurrent: true });
          const expectedCurrent =
            platformDay > storedDay || (platformDay === storedDay && !sameVersion(platform, stored))
              ? platform
              : stored;
          expect(shape(model.current.get('r1'))).toBe(shape(expectedCurrent));
          // Whatever won, the other version is kept.
          expect(model.archive.has(versionKey('r1', model.current.get('r1')!))).toBe(false);
          if (!sameVersion(platform, stored)) {
            const other = expectedCurrent === platform ? stored : platform;
            expect(model.archive).toEqual(new Set([versionKey('r1', other)]));
          }
        },
      ),
      { numRuns: 300 },
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

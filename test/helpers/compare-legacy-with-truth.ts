/**
 * The legacy oracle of end-to-end tests: the warehouse's legacy records that are not marked deleted,
 * row for row against the sandbox's current legacy records (every (object, _id) with its current
 * last_updated and body). A record deleted on the platform must be marked deleted (else: unexpected);
 * a row marked deleted that the platform still has counts as missing.
 */
import { sql } from 'kysely';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';

export interface LegacyDifferences {
  missing: string[];
  unexpected: string[];
  wrongLastUpdated: string[];
  wrongBody: string[];
}

export const NO_LEGACY_DIFFERENCES: LegacyDifferences = {
  missing: [],
  unexpected: [],
  wrongLastUpdated: [],
  wrongBody: [],
};

export async function compareLegacyWithTruth(
  warehouse: Warehouse,
  sandbox: Sandbox,
): Promise<LegacyDifferences> {
  const rows = await sql<{ object: string; id: string; last_updated: Date | null; raw: unknown }>`
    select object, id, last_updated, raw from validic.legacy_records
    where org_id = ${sandbox.orgId} and deleted_at is null`.execute(warehouse.db);
  const stored = new Map(rows.rows.map((r) => [`${r.object}/${r.id}`, r]));
  const differences: LegacyDifferences = { missing: [], unexpected: [], wrongLastUpdated: [], wrongBody: [] };
  const truth = sandbox.truth.legacyRecords();
  for (const { object, ...record } of truth) {
    const key = `${object}/${record._id}`;
    const row = stored.get(key);
    if (!row) differences.missing.push(key);
    else {
      if (row.last_updated?.getTime() !== Date.parse(record.last_updated))
        differences.wrongLastUpdated.push(key);
      if (JSON.stringify(sortKeys(row.raw)) !== JSON.stringify(sortKeys(record)))
        differences.wrongBody.push(key);
    }
  }
  const truthKeys = new Set(truth.map((r) => `${r.object}/${r._id}`));
  for (const key of stored.keys()) if (!truthKeys.has(key)) differences.unexpected.push(key);
  return differences;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  }
  return value;
}

/**
 * The oracle of end-to-end tests: what the warehouse holds for an org, compared row for row with the
 * sandbox's ground truth (users, current record versions, connection events).
 */
import { sql } from 'kysely';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';

export interface Differences {
  missingRecords: string[];
  unexpectedRecords: string[];
  wrongVersion: string[];
  wrongDeleted: string[];
  missingUsers: string[];
  missingConnectionEvents: string[];
  duplicateKeys: number;
}

/** The org's records as stored (id, checksum, whether deleted), by id. */
export async function storedRecords(
  warehouse: Warehouse,
  orgId: string,
): Promise<Map<string, { id: string; checksum: string; deleted: boolean }>> {
  const rows = await sql<{ id: string; checksum: string; deleted: boolean }>`
    select id, checksum, deleted_at is not null as deleted from validic.records where org_id = ${orgId}`.execute(
    warehouse.db,
  );
  return new Map(rows.rows.map((r) => [r.id, r]));
}

/** Record ids the org holds more than once. */
export async function countDuplicateKeys(warehouse: Warehouse, orgId: string): Promise<number> {
  const duplicates = await sql<{ n: number }>`
    select count(*)::int as n from (select id from validic.records where org_id = ${orgId} group by id having count(*) > 1) d`.execute(
    warehouse.db,
  );
  return duplicates.rows[0]!.n;
}

/** Whether a truth record is deleted (deleted_at set). */
export const isDeleted = (record: { deleted_at?: string | null }): boolean =>
  record.deleted_at !== null && record.deleted_at !== undefined;

export async function compareWithTruth(warehouse: Warehouse, sandbox: Sandbox): Promise<Differences> {
  const orgId = sandbox.orgId;
  const stored = await storedRecords(warehouse, orgId);
  const truth = new Map(sandbox.truth.records().map((r) => [r.id, r]));
  const differences = noDifferences();
  for (const [id, record] of truth) {
    const row = stored.get(id);
    if (!row) differences.missingRecords.push(id);
    else {
      if (row.checksum !== record.checksum) differences.wrongVersion.push(id);
      if (row.deleted !== isDeleted(record)) differences.wrongDeleted.push(id);
    }
  }
  for (const id of stored.keys()) if (!truth.has(id)) differences.unexpectedRecords.push(id);

  const users = await sql<{ uid: string }>`select uid from validic.users where org_id = ${orgId}`.execute(
    warehouse.db,
  );
  const storedUids = new Set(users.rows.map((u) => u.uid));
  for (const user of sandbox.truth.users())
    if (!storedUids.has(user.uid)) differences.missingUsers.push(user.uid);

  const events = await sql<{
    id: string;
  }>`select id from validic.connection_events where org_id = ${orgId}`.execute(warehouse.db);
  const storedEvents = new Set(events.rows.map((e) => e.id));
  for (const event of sandbox.truth.connections()) {
    if (event.created_at >= '2025-07-01' && !storedEvents.has(event.id))
      differences.missingConnectionEvents.push(event.id);
  }
  differences.duplicateKeys = await countDuplicateKeys(warehouse, orgId);
  return differences;
}

/** No differences at all: a fresh object on each call (compareWithTruth fills its own). */
function noDifferences(): Differences {
  return {
    missingRecords: [],
    unexpectedRecords: [],
    wrongVersion: [],
    wrongDeleted: [],
    missingUsers: [],
    missingConnectionEvents: [],
    duplicateKeys: 0,
  };
}

export const NO_DIFFERENCES: Differences = noDifferences();

/**
 * Which of some record versions and connection events the warehouse holds nowhere: not as a record's
 * current version (validic.records), not as a kept older one (validic.record_versions), not as a stored
 * connection event. A reconciliation pass asks it of what it is about to load: the answer, counted once
 * per version whatever batch or connection brings it and in whatever order, is what the primary stream
 * missed. One round trip per batch, on the tables' primary keys.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export interface VersionKey {
  id: string;
  checksum: string;
}

/** The versions and events of the lists that the warehouse holds nowhere (as `id\u0001checksum` / ids). */
export async function absentVersions(
  db: Kysely<Database>,
  orgId: string,
  versions: readonly VersionKey[],
  eventIds: readonly string[],
): Promise<{ versions: Set<string>; events: Set<string> }> {
  const key = (id: string, checksum: string) => `${id}\u0001${checksum}`;
  const absent = { versions: new Set(versions.map((v) => key(v.id, v.checksum))), events: new Set(eventIds) };
  if (versions.length > 0) {
    const ids = [...new Set(versions.map((v) => v.id))];
    const { rows } = await sql<{ id: string; checksum: string }>`
      select id, checksum from validic.records where org_id = ${orgId} and id = any(${ids}::text[])
      union all
      select record_id as id, checksum from validic.record_versions where org_id = ${orgId} and record_id = any(${ids}::text[])`.execute(
      db,
    );
    for (const r of rows) absent.versions.delete(key(r.id, r.checksum));
  }
  if (eventIds.length > 0) {
    const { rows } = await sql<{ id: string }>`
      select id from validic.connection_events where org_id = ${orgId} and id = any(${[...absent.events]}::text[])`.execute(
      db,
    );
    for (const r of rows) absent.events.delete(r.id);
  }
  return absent;
}

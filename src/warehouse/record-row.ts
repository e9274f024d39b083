/**
 * The values of one `validic.records` row, in the column order of both write paths (the staging table
 * in staging-tables.ts and RECORD_COLUMNS of the direct insert of new ids): one list of values, so a
 * field cannot be added to one path and forgotten in the other.
 */
import type { NormalizedRecord } from '../normalize/normalized-types.ts';

export function recordRowValues(r: NormalizedRecord['record']): unknown[] {
  return [
    r.id,
    r.type,
    r.version,
    r.checksum,
    r.uid,
    r.userId,
    r.sourceType,
    r.sourceDevice,
    r.logId,
    r.startTime,
    r.endTime,
    r.utcOffset,
    r.offsetOrigin,
    r.createdAt,
    r.deletedAt,
    r.tags,
    r.userNotes,
    r.name,
    r.category,
    r.granularityInterval,
    r.granularityUnit,
    r.raw,
  ];
}

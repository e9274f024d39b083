/**
 * The oracle of the stream end-to-end tests: a stream delivers the events logged after it started, so
 * the warehouse must hold the CURRENT version (truth's checksum, deletion) of every record that has an
 * event in the log from `fromSeq` on, and every connection event logged from there; and every record
 * it holds at all (replay may bring older ones of the same day) must be at truth's current version:
 * an older version never wins.
 */
import { sql } from 'kysely';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { Warehouse } from '../../src/warehouse/open-warehouse.ts';
import { countDuplicateKeys, isDeleted, storedRecords } from '../helpers/compare-with-truth.ts';

export interface StreamDifferences {
  missingRecords: string[];
  wrongVersion: string[];
  wrongDeleted: string[];
  unknownRecords: string[];
  missingConnectionEvents: string[];
  duplicateKeys: number;
}

/** No differences at all: a fresh object on each call (compareStreamWithTruth fills its own). */
function noStreamDifferences(): StreamDifferences {
  return {
    missingRecords: [],
    wrongVersion: [],
    wrongDeleted: [],
    unknownRecords: [],
    missingConnectionEvents: [],
    duplicateKeys: 0,
  };
}

export const NO_STREAM_DIFFERENCES: StreamDifferences = noStreamDifferences();

export interface StreamTruthFilter {
  /** Record types the stream carries (its resource filter); default all. */
  recordTypes?: string[];
  /** Whether connection events are expected; default true. */
  connections?: boolean;
}

export async function compareStreamWithTruth(
  warehouse: Warehouse,
  sandbox: Sandbox,
  fromSeq: number,
  filter: StreamTruthFilter = {},
): Promise<StreamDifferences> {
  const orgId = sandbox.orgId;
  const events = sandbox.truth.events().filter((e) => e.seq >= fromSeq);
  const truth = new Map(sandbox.truth.records().map((r) => [r.id, r]));
  const expectedIds = new Set<string>();
  const expectedEvents = new Set<string>();
  for (const e of events) {
    const id = (e.payload as { id?: string }).id;
    if (!id) continue;
    if (e.kind === 'connection') {
      if (filter.connections !== false) expectedEvents.add(id);
    } else if (!filter.recordTypes || filter.recordTypes.includes(e.kind)) expectedIds.add(id);
  }
  const stored = await storedRecords(warehouse, orgId);
  const out = noStreamDifferences();
  for (const id of expectedIds) if (!stored.has(id)) out.missingRecords.push(id);
  for (const [id, row] of stored) {
    const record = truth.get(id);
    if (!record) {
      out.unknownRecords.push(id);
      continue;
    }
    if (row.checksum !== record.checksum) out.wrongVersion.push(id);
    if (row.deleted !== isDeleted(record)) out.wrongDeleted.push(id);
  }
  const storedEvents = await sql<{ id: string }>`
    select id from validic.connection_events where org_id = ${orgId}`.execute(warehouse.db);
  const eventIds = new Set(storedEvents.rows.map((e) => e.id));
  for (const id of expectedEvents) if (!eventIds.has(id)) out.missingConnectionEvents.push(id);
  out.duplicateKeys = await countDuplicateKeys(warehouse, orgId);
  return out;
}

/** Parses the CLI's JSON log lines (stderr), skipping anything else. */
export function logLines(stderr: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not a log line
    }
  }
  return out;
}

/** The consumer's state transitions, in order, from the CLI's logs (needs LOG_LEVEL=info). */
export function stateTransitions(
  stderr: string,
): { slot: unknown; from: string; to: string; reason: string }[] {
  return logLines(stderr)
    .filter((l) => l.msg === 'SSE consumer state')
    .map((l) => ({ slot: l.slot, from: String(l.from), to: String(l.to), reason: String(l.reason) }));
}

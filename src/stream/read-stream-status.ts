/**
 * What `status` shows about an org's stream: each connection's checkpoint (live or since when
 * disconnected, newest record committed), the gaps handed to REST backfill, and the last reconcile.
 * Reads cursors only; `formatStreamStatus` turns them into lines.
 */
import type { Kysely } from 'kysely';
import { listCursors, readCursor } from '../warehouse/checkpoints.ts';
import type { Database } from '../warehouse/database.ts';
import type { StreamGapsCursor } from './record-stream-gap.ts';
import { STREAM_GAPS_KEY } from './stream-cursor-keys.ts';
import type { StreamCheckpoint } from './types.ts';

const CHECKPOINT_PREFIX = 'stream:checkpoint:';

export interface StreamConnectionStatus extends StreamCheckpoint {
  streamName: string;
  slot: number;
  streamId?: string;
  /** When the cursor was last written (the last commit or checkpoint heartbeat). */
  updatedAt: Date;
}

export interface ReconcileStatus {
  at: string;
  startDate: string;
  endDate: string;
  events: number;
  missed: number;
}

export interface StreamStatus {
  connections: StreamConnectionStatus[];
  gaps: StreamGapsCursor | undefined;
  reconcile: ReconcileStatus | undefined;
}

export async function readStreamStatus(db: Kysely<Database>, orgId: string): Promise<StreamStatus> {
  const cursors = await listCursors(db, orgId, CHECKPOINT_PREFIX);
  const connections: StreamConnectionStatus[] = [];
  for (const cursor of cursors) {
    const rest = cursor.key.slice(CHECKPOINT_PREFIX.length);
    const cut = rest.lastIndexOf(':');
    const value = (cursor.value ?? {}) as StreamCheckpoint & { streamId?: string };
    connections.push({
      ...value,
      streamName: rest.slice(0, cut),
      slot: Number(rest.slice(cut + 1)),
      updatedAt: cursor.updatedAt,
    });
  }
  return {
    connections,
    gaps: await readCursor<StreamGapsCursor>(db, orgId, STREAM_GAPS_KEY),
    reconcile: await readCursor<ReconcileStatus>(db, orgId, 'reconcile:last'),
  };
}

/** Human lines for `status`; `now` (ms) gives the lag of the newest record committed. */
export function formatStreamStatus(status: StreamStatus, now: number): string[] {
  const lines: string[] = [];
  for (const c of status.connections) {
    const state = c.lastDisconnectAt
      ? `disconnected since ${c.lastDisconnectAt}`
      : `live at ${c.lastLiveAt ?? '?'}`;
    const newest = c.newestCreatedAt
      ? `newest record ${c.newestCreatedAt} (lag ${Math.round((now - Date.parse(c.newestCreatedAt)) / 1000)} s)`
      : 'no record yet';
    lines.push(`stream "${c.streamName}" connection ${c.slot}: ${state}; ${newest}`);
  }
  if (status.gaps && status.gaps.total > 0) {
    const pending = status.gaps.gaps.filter((g) => g.backfill !== 'not-needed');
    lines.push(
      `stream gaps: ${status.gaps.total} recorded; ${pending.length} needing a REST backfill (${pending
        .slice(-3)
        .map((g) => `${g.from.slice(0, 10)}..${g.to.slice(0, 10)} ${g.backfill}`)
        .join(', ')})`,
    );
  }
  if (status.reconcile) {
    const r = status.reconcile;
    lines.push(
      `reconcile ${r.startDate}..${r.endDate} at ${r.at}: ${r.events} connection events seen, ${r.missed} missed by the stream`,
    );
  }
  return lines;
}

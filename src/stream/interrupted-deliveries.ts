/**
 * Deliveries whose process is gone. A delivery's row says `running` until its process ends it; a process
 * that was killed (SIGKILL, a crash, a lost machine) never does. A later run finds such rows and marks them
 * `interrupted`, and a pass of the reconciliation stream that was cut this way leaves a gap: what the
 * stream had sent it and it had not committed, from its row's `committed_to` to now (the stream may have
 * sent it anything up to the moment it died, and that moment is not known more closely), for the replay.
 */
import { hostname } from 'node:os';
import type { Logger } from '../log/logger.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import {
  markReconcilePassInterrupted,
  type ReconcilePassRow,
  readRunningDeliveries,
  recordStreamGap,
} from '../warehouse/stream-bookkeeping.ts';
import { CLOCK_ESTIMATE_TOLERANCE_MS } from './consumer-cursor.ts';

/** A running row with no sign of life for this long belongs to a process that is gone. */
export const DELIVERY_DEAD_AFTER_MS = 120_000;

/** Whether process `pid` runs on this host (a signal 0 probes it; EPERM means it exists). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Dead when its process is gone from this host, or when its row has shown no sign of life for
 * `DELIVERY_DEAD_AFTER_MS` (another host, or a pid taken over by another process).
 */
export function deliveryDead(
  row: ReconcilePassRow & { heartbeatAgeMs: number },
  host = hostname(),
  alive: (pid: number) => boolean = processAlive,
): boolean {
  if (row.host === host && row.pid !== null) {
    if (row.pid === process.pid) return false;
    if (!alive(row.pid)) return true;
  }
  return row.heartbeatAgeMs > DELIVERY_DEAD_AFTER_MS;
}

/**
 * Marks the org's dead deliveries `interrupted` and records the gap of each cut pass of the
 * reconciliation stream. `nowMs` is platform time. Returns how many were found.
 */
export async function closeDeadDeliveries(
  warehouse: Warehouse,
  orgId: string,
  nowMs: number,
  log: Pick<Logger, 'warn'>,
): Promise<number> {
  let found = 0;
  for (const row of await readRunningDeliveries(warehouse.db, orgId)) {
    if (!deliveryDead(row)) continue;
    // Taken late: the process may have read until the moment it died, and `nowMs` is an estimate.
    const readTo = new Date(nowMs + CLOCK_ESTIMATE_TOLERANCE_MS).toISOString();
    if (!(await markReconcilePassInterrupted(warehouse.db, row.id, readTo))) continue;
    found += 1;
    log.warn(
      { orgId, passId: row.id, source: row.source, host: row.host, pid: row.pid },
      `delivery ${row.id} (${row.source === 'stream' ? 'a pass of the reconciliation stream' : 'a gap replay'}) was interrupted: its process is gone`,
    );
    // A replay starts again from its date: its gaps are still open, nothing new is lost.
    if (row.source !== 'stream') continue;
    const from = row.committedTo ?? row.coverFrom ?? row.reachFrom;
    await recordStreamGap(warehouse.db, {
      orgId,
      streamName: row.streamName,
      slot: 0,
      from,
      to: Date.parse(readTo) > Date.parse(from) ? readTo : from,
      reason: 'pass-crash',
      handledBy: 'replay',
    });
  }
  return found;
}

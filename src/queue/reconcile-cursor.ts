/**
 * The `reconcile:last` cursor: what the last reconciliation of connection events saw and added. Written
 * by each connections.reconcile job outside a backfill run (its window) and by the `reconcile` command
 * (the totals of its range, replacing the windows'); `status` and `/metrics` read it.
 */
import type { CursorWrite } from '../pipeline/batch.ts';

export interface ReconcileCursor {
  at: string;
  startDate: string;
  endDate: string;
  /** Events the platform listed. */
  events: number;
  /** Of those, events that were not in the warehouse yet (the stream missed them). */
  missed: number;
}

export function reconcileCursor(value: Omit<ReconcileCursor, 'at'>, at = new Date()): CursorWrite {
  const cursor: ReconcileCursor = { at: at.toISOString(), ...value };
  return { key: 'reconcile:last', value: cursor };
}

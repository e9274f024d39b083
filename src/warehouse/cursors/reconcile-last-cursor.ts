/**
 * `reconcile:last`: what the last reconciliation of connection events saw and added. Written by each
 * connections.reconcile job outside a backfill run (its window) and by the `reconcile` command (the
 * totals of its range, replacing the windows'); `status` and `/metrics` read it.
 */
import { z } from 'zod';
import type { CursorWrite } from '../../pipeline/batch.ts';
import { defineCursor } from './define-cursor.ts';

const reconcileLastValue = z.object({
  at: z.string(),
  startDate: z.string(),
  endDate: z.string(),
  /** Events the platform listed. */
  events: z.number(),
  /** Of those, events that were not in the warehouse yet (the stream missed them). */
  missed: z.number(),
});
export type ReconcileLast = z.output<typeof reconcileLastValue>;

export const reconcileLastCursor = defineCursor(() => 'reconcile:last', reconcileLastValue);

/** The write of a reconciliation's result, stamped `at`. */
export function reconcileLastWrite(value: Omit<ReconcileLast, 'at'>, at = new Date()): CursorWrite {
  return reconcileLastCursor().write({ at: at.toISOString(), ...value });
}

/**
 * The date windows one user's recent poll fetches (pure): the last `lookbackDays` days plus today (and a
 * day more at each edge), in windows of ≤ 30 days. The records.recent tick queues one records.poll per window, and the budget
 * planner counts requests per user from the same windows, so the plan and the polls cannot disagree.
 */
import { type DateWindow, formatUtcDate, planRecordWindows } from '../validic/date-windows.ts';

export function recentPollWindows(lookbackDays: number, nowMs: number): DateWindow[] {
  const today = Math.floor(nowMs / 86_400_000);
  // One day more at each edge: the platform may window by the user's local date (date-windows.ts).
  return planRecordWindows(formatUtcDate(today - lookbackDays), formatUtcDate(today));
}

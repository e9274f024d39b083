/**
 * How many push fetches one drain may claim now (pure): push's share of the request budget, spread
 * evenly. Why and how: README.md, "`push-drain-gate.ts`".
 */
const HOUR_MS = 3_600_000;

export interface PushDrainWindow {
  /** Length of the sliding window the gate counts over (ms): an hour divided into whole windows. */
  windowMs: number;
  /** Requests the window may hold; windows per hour × this ≤ the hourly cap. */
  perWindow: number;
}

/**
 * The window for a cap of `capPerHour`: `preferredMs` (e.g. ten ticks) rounded so a whole number k of
 * windows makes an hour, with k ≤ the cap (a cap of 3 an hour gets 20-minute windows of one), and
 * ⌊cap ÷ k⌋ requests each. Any hour is covered by k consecutive windows, so no hour holds more than
 * k·⌊cap ÷ k⌋ ≤ cap requests.
 */
export function pushDrainWindow(capPerHour: number, preferredMs: number): PushDrainWindow {
  const cap = Math.max(0, Math.floor(capPerHour));
  const preferred = Math.max(1, Math.round(HOUR_MS / Math.max(1, preferredMs)));
  const k = Math.max(1, Math.min(preferred, cap));
  return { windowMs: HOUR_MS / k, perWindow: Math.floor(cap / k) };
}

export interface PushDrainAllowanceInput {
  window: PushDrainWindow;
  /** The drain tick (`budget.tickSeconds` in ms): the first drain may take a tick's worth. */
  tickMs: number;
  /** Requests of fetches claimed within the window (finished ones count their pages). */
  claimedInWindow: number;
  /** Fetches queued and not finished. */
  inFlight: number;
  lastClaimAt: number | null;
  now: number;
}

/**
 * At most what the window still holds, no more in flight than a window's worth, and no more than the
 * rate allows since the last claim (so a window's worth is not spent in one burst ahead of the other
 * kinds of work: a drain after a quiet spell takes at most two ticks' worth).
 */
export function pushDrainAllowance(input: PushDrainAllowanceInput): number {
  const { window, tickMs, now } = input;
  if (window.perWindow <= 0) return 0;
  const since =
    input.lastClaimAt === null ? tickMs : Math.min(2 * tickMs, Math.max(0, now - input.lastClaimAt));
  const byRate = Math.ceil((window.perWindow * since) / window.windowMs);
  return Math.max(
    0,
    Math.min(byRate, window.perWindow - input.claimedInWindow, window.perWindow - input.inFlight),
  );
}

/** What every route and control operation shares, except the stream hub (which is built from this). */
import type { FaultSwitches, RequestBudget } from './faults.ts';
import type { Notifier } from './notifier.ts';
import type { Prng } from './prng.ts';
import type { SandboxState } from './state.ts';
import type { RequestStats } from './stats.ts';
import type { SandboxClock } from './time.ts';

export interface CoreSettings {
  pokeIntervalMs: number;
  intradayIntervalMinutes: number;
  /** Events re-sent to the first connection after a disconnect (at-least-once delivery). */
  redeliverCount: number;
  /** How long a stream keeps its checkpoint after the last client disconnects (7 days). */
  checkpointRetentionMs: number;
  /** First day the replay and connections endpoints know (2025-07-01). */
  eventsAvailableFromMs: number;
  /** Rename day for renamed sources (`nokia` → `withings`). */
  renameDayMs: number;
  /** Which date of a record start_date/end_date match: its UTC date, or the user's local date. */
  windowBy: 'utc' | 'local';
  /** Where a stream created without start_date begins: at its creation, or at the start of that UTC day. */
  newStreamStart: 'creation' | 'start-of-day';
}

export interface CoreBase {
  state: SandboxState;
  clock: SandboxClock;
  faults: FaultSwitches;
  /** The platform's own rate limit (`requestsPerHour`), separate from the budget fault. */
  rateLimit: RequestBudget;
  stats: RequestStats;
  /** Draws for data created after start-up (control operations, live feed). */
  prng: Prng;
  notifier: Notifier;
  settings: CoreSettings;
  /** UTC offset (seconds) per uid, from the user's time zone. */
  offsets: Map<string, number>;
  /** Base URL of the v2 API, used to build marketplace addresses. */
  apiUrl: string;
}

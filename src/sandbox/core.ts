/** What every route and control operation shares: state, clock, faults, stats, streams, notifications. */
import type { CoreBase } from './core-base.ts';
import type { StreamHub } from './stream-hub.ts';

export interface SandboxCore extends CoreBase {
  streams: StreamHub;
}

/**
 * What an org's stream did, summed over its connections: the consumers' counters plus the loader's
 * counts, and the gaps it handed to REST backfill. The CLI prints it; the worker exports it as metrics.
 */

import { emptyCounts, type LoadCounts } from '../pipeline/batch.ts';
import { emptyStreamCounters } from './consumer-machine.ts';
import type { StreamCounters } from './types.ts';

export interface OrgStreamSummary {
  orgId: string;
  streamId: string;
  streamName: string;
  connections: number;
  counters: StreamCounters;
  records: LoadCounts;
  /** Gaps recorded in `validic_sync.stream_gaps` by this run (unclean ends, replays that could not fill theirs). */
  gaps: number;
  /** `records.backfill` jobs enqueued for gaps. */
  backfillsEnqueued: number;
}

/** `a + b`, field by field (a new object). */
export function addStreamCounters(a: StreamCounters, b: StreamCounters): StreamCounters {
  const out = emptyStreamCounters();
  for (const kind of ['data', 'poke', 'other', 'bad'] as const)
    out.frames[kind] = a.frames[kind] + b.frames[kind];
  for (const source of [a.otherEvents, b.otherEvents])
    for (const [name, n] of Object.entries(source)) out.otherEvents[name] = (out.otherEvents[name] ?? 0) + n;
  for (const key of [
    'connects',
    'reconnects',
    'rebalancing',
    'errors',
    'staleDetections',
    'idleDrops',
    'replays',
    'replaysCaughtUp',
    'replaysShared',
    'replaySkipped',
    'gaps',
    'uncleanEnds',
    'rateLimited',
    'commits',
    'committedFrames',
    'commitFailures',
  ] as const)
    out[key] = a[key] + b[key];
  return out;
}

export function addLoadCounts(into: LoadCounts, add: LoadCounts): void {
  for (const key of Object.keys(emptyCounts()) as (keyof LoadCounts)[]) into[key] += add[key];
}

/** The consumer's counters: all at zero, and a copy (the transition function never shares them). */
import type { StreamCounters } from './types.ts';

/** Every counter at zero (also the start of the summaries that add up several consumers). */
export function emptyStreamCounters(): StreamCounters {
  return {
    frames: { data: 0, poke: 0, other: 0, bad: 0 },
    otherEvents: {},
    connects: 0,
    reconnects: 0,
    rebalancing: 0,
    errors: 0,
    staleDetections: 0,
    idleDrops: 0,
    replays: 0,
    replaysCaughtUp: 0,
    replaysShared: 0,
    replaySkipped: 0,
    gaps: 0,
    uncleanEnds: 0,
    rateLimited: 0,
    commits: 0,
    committedFrames: 0,
    commitFailures: 0,
  };
}

export function copyStreamCounters(c: StreamCounters): StreamCounters {
  return { ...c, frames: { ...c.frames }, otherEvents: { ...c.otherEvents } };
}

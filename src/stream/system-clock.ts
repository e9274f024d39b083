/** The real clock. Tests inject their own `Clock` (an offset clock, or small ms values). */
import { setTimeout as sleepFor } from 'node:timers/promises';
import type { Clock } from './types.ts';

export const systemClock: Clock = {
  now: () => Date.now(),
  async sleep(ms, signal) {
    try {
      await sleepFor(Math.max(0, ms), undefined, signal ? { signal } : {});
    } catch (error) {
      // An aborted sleep just ends early; the caller checks its signal.
      if (!signal?.aborted) throw error;
    }
  },
};

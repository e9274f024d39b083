/**
 * Seeded pseudo-random numbers (mulberry32). Every generated value and every fault decision draws
 * from one of these, so a sandbox started with the same seed serves the same data and the same
 * sequence of faults.
 */
export interface Prng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(probability: number): boolean;
  /** 24 hex characters, the shape of the platform's ids. */
  hexId(): string;
}

export function createPrng(seed: number): Prng {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    chance: (probability: number): boolean => probability > 0 && next() < probability,
    hexId: (): string => {
      let out = '';
      for (let i = 0; i < 3; i++)
        out += Math.floor(next() * 0x100000000)
          .toString(16)
          .padStart(8, '0');
      return out;
    },
  };
}

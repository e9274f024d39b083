/**
 * Optional live generator: new records (mostly), changes and deletions at a steady rate, drawn from
 * its own seeded PRNG so a run with the same seed produces the same sequence of kinds. New records are
 * of the types the sandbox's `mix` makes (every type when it makes none).
 */
import type { SandboxCore } from './core.ts';
import { addRecord, deleteRecord, updateRecord } from './mutations.ts';
import { createPrng } from './prng.ts';
import { RESOURCE_TYPES, type ResourceType } from './types.ts';

const TICK_MS = 100;

export class LiveFeed {
  private timer: NodeJS.Timeout | null = null;
  private readonly core: SandboxCore;
  private readonly prng;
  private readonly types: readonly ResourceType[];
  produced = 0;

  constructor(core: SandboxCore, seed: number, mix: Record<ResourceType, number>) {
    this.core = core;
    this.prng = createPrng(seed ^ 0x11fe);
    const made = RESOURCE_TYPES.filter((type) => mix[type] > 0);
    this.types = made.length > 0 ? made : RESOURCE_TYPES;
  }

  start(ratePerSecond: number): void {
    this.stop();
    let owed = 0;
    this.timer = setInterval(() => {
      owed += (ratePerSecond * TICK_MS) / 1000;
      for (; owed >= 1; owed--) this.step();
    }, TICK_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  get running(): boolean {
    return this.timer !== null;
  }

  /** One event: 75% a new record, 20% a changed record, 5% a deletion. */
  step(): void {
    const uids = [...this.core.state.users.keys()];
    if (uids.length === 0) return;
    const roll = this.prng.next();
    const ids = roll >= 0.75 ? [...this.core.state.records.keys()] : [];
    if (ids.length > 0) {
      const id = this.prng.pick(ids);
      if (roll < 0.95) updateRecord(this.core, id);
      else deleteRecord(this.core, id);
    } else {
      addRecord(this.core, { uid: this.prng.pick(uids), type: this.prng.pick(this.types) });
    }
    this.produced++;
  }
}

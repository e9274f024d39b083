/**
 * What a delivery (a pass of the reconciliation stream, or a replay) brings that the primary stream
 * LOST, as opposed to what the live primary had simply not committed yet. The count is published as the
 * measured loss rate (`missed`), so it must not count the primary's open micro-batch.
 *
 * A record version (or connection event) the delivery brings is missed when the warehouse holds it
 * nowhere and the primary could not have committed it:
 * - it is older than what every live primary connection has committed (`floor`, less `ORDER_SLACK_MS`:
 *   the primary moved past it, in the platform's sending order, without it); or
 * - the primary is not live and it was created before the primary was last heard from (it was sent to a
 *   connection that then dropped or died; what was created later the platform keeps for the primary).
 * A version that is newer than the floor while the primary is live is held (not loaded, not judged) until
 * the floor passes it or the delivery ends; then, once the primary's batch in flight has landed (the
 * floor passed the newest held version, the primary stopped being live, or `maxWaitMs` went by), what is
 * still absent is missed. Held versions are then loaded. At most `maxHeld` are held: past that, the
 * oldest are judged at once with the same rule.
 */
import type { Clock } from '../time/clock.ts';
import type { PrimarySlotCursor } from '../warehouse/stream-bookkeeping.ts';
import { parseTime } from './consumer-cursor.ts';
import type { DataFrame } from './types.ts';

/**
 * How far the platform's sending order and `created_at` may disagree: connection events carry whole
 * seconds (a record created in the same second, sent before, can look newer), and processing may stamp
 * neighbours a little out of order. A version counts as passed by the primary only this far below it.
 */
export const ORDER_SLACK_MS = 2_000;

/** The primary stream as a delivery sees it, on the platform's clock (ms). */
export interface PrimaryView {
  /** Some connection is live: connected, heard from within `liveWithinMs`. */
  live: boolean;
  /** The least of what each live connection has committed through (undefined: not known). */
  floorMs: number | undefined;
  /** The last time any connection was heard from. */
  lastHeardMs: number | undefined;
}

/**
 * The primary's view from its connections' cursors at platform time `nowMs`: a connection is live when it
 * recorded no disconnect and was heard from within `liveWithinMs` (its cursor is written with every
 * commit and at least every `heartbeatCommitMs` while only pokes arrive).
 */
export function primaryView(
  slots: readonly PrimarySlotCursor[],
  nowMs: number,
  liveWithinMs: number,
): PrimaryView {
  let floorMs: number | undefined;
  let lastHeardMs: number | undefined;
  let live = false;
  let floorKnown = true;
  for (const slot of slots) {
    const heard = parseTime(slot.lastLiveAt);
    if (heard === undefined) continue;
    const heardMs = heard + (slot.platformOffsetMs ?? 0);
    if (lastHeardMs === undefined || heardMs > lastHeardMs) lastHeardMs = heardMs;
    if (slot.lastDisconnectAt !== undefined || nowMs - heardMs > liveWithinMs) continue;
    live = true;
    const marks = [parseTime(slot.newestCreatedAt), parseTime(slot.quietAt)].filter(
      (ms): ms is number => ms !== undefined,
    );
    if (marks.length === 0) {
      floorKnown = false;
      continue;
    }
    const through = Math.max(...marks);
    if (floorMs === undefined || through < floorMs) floorMs = through;
  }
  return { live, floorMs: floorKnown ? floorMs : undefined, lastHeardMs };
}

/** The key of a data frame's record version (`id\u0001checksum`) or connection event (`event\u0001id`). */
export function versionKey(frame: DataFrame): string | undefined {
  if (frame.kind !== 'data') return undefined;
  const p = frame.payload as { id?: unknown; checksum?: unknown; action?: unknown } | null;
  if (typeof p?.id !== 'string') return undefined;
  if (typeof p.action === 'string') return `event\u0001${p.id}`;
  if (typeof p.checksum === 'string') return `${p.id}\u0001${p.checksum}`;
  return undefined;
}

export interface MissedJudgeDeps {
  /** The primary now (its cursors, read from the warehouse). */
  primary(): Promise<PrimaryView>;
  /** Which of these keys the warehouse holds nowhere. */
  absent(keys: readonly string[]): Promise<Set<string>>;
  /** Loads frames through the one loader (tagged with the delivery's path). */
  load(frames: DataFrame[]): Promise<void>;
  clock: Pick<Clock, 'now' | 'sleep'>;
  /** Longest wait for the primary's batch in flight at the end. Default 60,000 ms. */
  maxWaitMs?: number;
  /** Most versions held. Default 1,000. */
  maxHeld?: number;
}

interface Held {
  key: string;
  frame: DataFrame;
  createdMs: number;
}

export class MissedJudge {
  readonly #deps: MissedJudgeDeps;
  readonly #missed = new Set<string>();
  #held: Held[] = [];
  /** Batches are judged one at a time, whatever connection brings them. */
  #queue: Promise<void> = Promise.resolve();

  constructor(deps: MissedJudgeDeps) {
    this.#deps = deps;
  }

  /** Versions judged missed so far. */
  get missed(): number {
    return this.#missed.size;
  }

  /** The oldest `created_at` held (ms): everything the delivery read before it is loaded. */
  oldestHeldMs(): number | undefined {
    return this.#held.length === 0 ? undefined : Math.min(...this.#held.map((h) => h.createdMs));
  }

  /** Judges a batch: loads what can be loaded now, holds what the live primary may still commit. */
  take(batch: DataFrame[]): Promise<void> {
    const run = this.#queue.then(() => this.#take(batch));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * The delivery read everything: waits (at most `maxWaitMs`, less once `stopping`) for the primary's
   * batch in flight, judges what is held, and loads it.
   */
  finish(options: { stopping?: boolean } = {}): Promise<void> {
    const run = this.#queue.then(() => this.#finish(options.stopping ?? false));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #take(batch: DataFrame[]): Promise<void> {
    const keyed = batch.map((frame) => ({ frame, key: versionKey(frame) }));
    const keys = keyed.flatMap((k) => (k.key ? [k.key] : []));
    // The primary first, then what the warehouse holds: the primary commits its data and its cursor in
    // one transaction, so whatever the cursor read here has passed is visible to the read after it.
    // (The other order judged the primary's batch landing in between as missed.)
    const view = await this.#deps.primary();
    const absent = keys.length > 0 ? await this.#deps.absent(keys) : new Set<string>();
    const load: DataFrame[] = [];
    for (const { frame, key } of keyed) {
      if (!key || !absent.has(key)) {
        load.push(frame);
        continue;
      }
      const createdMs = parseTime(frame.kind === 'data' ? frame.createdAt : undefined) ?? -Infinity;
      const verdict = judge(view, createdMs, false);
      if (verdict === 'hold') this.#held.push({ key, frame, createdMs });
      else {
        if (verdict === 'missed') this.#missed.add(key);
        load.push(frame);
      }
    }
    // The floor moved: what it passed is judged now (it is still absent, or the primary brought it).
    load.push(...(await this.#release(view)));
    const maxHeld = this.#deps.maxHeld ?? 1_000;
    if (this.#held.length > maxHeld) {
      // The live primary is far behind: the oldest are loaded now, missed only when the rule says so.
      this.#held.sort((a, b) => a.createdMs - b.createdMs);
      const over = this.#held.splice(0, this.#held.length - Math.floor(maxHeld / 2));
      load.push(...(await this.#judgeHeld(over, view, false)));
    }
    if (load.length > 0) await this.#deps.load(load);
  }

  async #finish(stopping: boolean): Promise<void> {
    if (this.#held.length === 0) return;
    const maxWaitMs = stopping ? 0 : (this.#deps.maxWaitMs ?? 60_000);
    const until = this.#deps.clock.now() + maxWaitMs;
    const newest = Math.max(...this.#held.map((h) => h.createdMs));
    let view = await this.#deps.primary();
    while (
      view.live &&
      (view.floorMs === undefined || view.floorMs < newest + ORDER_SLACK_MS) &&
      this.#deps.clock.now() < until
    ) {
      await this.#deps.clock.sleep(250);
      view = await this.#deps.primary();
    }
    const held = this.#held;
    this.#held = [];
    const load = await this.#judgeHeld(held, view, true);
    if (load.length > 0) await this.#deps.load(load);
  }

  /** Held versions the floor has passed (or the primary stopped being live): judged, to be loaded. */
  async #release(view: PrimaryView): Promise<DataFrame[]> {
    const due = new Set(this.#held.filter((h) => judge(view, h.createdMs, false) !== 'hold'));
    if (due.size === 0) return [];
    this.#held = this.#held.filter((h) => !due.has(h));
    return this.#judgeHeld([...due], view, false);
  }

  /**
   * Judges held versions now: those still absent are missed when the rule says so (`final`: past the
   * wait, a version the live primary still has not committed is lost). Returns them, to be loaded.
   */
  async #judgeHeld(held: Held[], view: PrimaryView, final: boolean): Promise<DataFrame[]> {
    if (held.length === 0) return [];
    const absent = await this.#deps.absent(held.map((h) => h.key));
    for (const h of held) {
      if (absent.has(h.key) && judge(view, h.createdMs, final) === 'missed') this.#missed.add(h.key);
    }
    return held.map((h) => h.frame);
  }
}

/**
 * One absent version created at `createdMs` (ms, platform): `missed`, `not-missed` (the platform keeps it
 * for a primary that is down), or `hold` (the live primary may still commit it).
 */
function judge(view: PrimaryView, createdMs: number, final: boolean): 'missed' | 'not-missed' | 'hold' {
  if (!view.live) {
    return view.lastHeardMs !== undefined && createdMs <= view.lastHeardMs ? 'missed' : 'not-missed';
  }
  if (view.floorMs !== undefined && createdMs <= view.floorMs - ORDER_SLACK_MS) return 'missed';
  return final ? 'missed' : 'hold';
}

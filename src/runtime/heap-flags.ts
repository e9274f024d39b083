/**
 * The V8 heap flags every launcher of validic-sync passes to `node`: the npm scripts (`cli`, `demo`),
 * the Dockerfile's entrypoint and the CLI's shebang (so the `bin` built from it). The memory benchmark
 * spawns the CLI with them, and test/unit/heap-flags.test.ts checks that every launcher carries them.
 *
 * Why: on a host with much memory, V8 lets the young generation grow to 64 MB per semi-space (128 MB
 * in all) while the sync's live heap is about 40 MB; most of the process's peak RSS was that nursery.
 * Capping a semi-space at 8 MB took a 60,000-record backfill from ~360 MB to ~260 MB peak RSS at the
 * same speed (bench/scale-and-memory.ts). No old-space cap: a big intraday page must never crash the
 * process to save memory.
 *
 * They cannot be set from inside the process: V8 reads them when the heap is created.
 */
export const NODE_HEAP_FLAGS: readonly string[] = ['--max-semi-space-size=8'];

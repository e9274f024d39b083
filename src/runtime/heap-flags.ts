/**
 * The V8 heap flags every launcher of validic-sync passes to `node`: the npm scripts (`cli`, `demo`,
 * `start`), the Dockerfile's entrypoint and the CLI's shebang (so the `bin` built from it).
 *
 * The V8 heap flags every launcher of validic-sync passes to `node`: the npm scripts (`cli`, `demo`,
 * `start`), the Dockerfile's entrypoint and the CLI's shebang (so the `bin` built from it). The memory
 * benchmark spawns the CLI with them, and test/unit/runtime-heap-flags.test.ts checks that every launcher carries
 * them and that this Node accepts them.
 *
 * Why: the sync's live heap is 40–60 MB, but V8 sizes its heap for the host. On a machine with much
 * memory it lets the young generation grow to 64 MB per semi-space (128 MB in all), and lets the old
 * generation fill with dead objects up to several times the live size before collecting it. A
 * 60,000-record backfill peaked at ~360 MB RSS with the defaults (bench/scale-and-memory.ts, --quick):
 *
 * - `--max-semi-space-size=8`: the nursery stays at 16 MB; ~260 MB, same speed. Alone it promotes more
 *   short-lived batch data, so the old generation grows (~330 MB once a job loads a user's every resource);
 * - `--heap-growing-percent=50`: the old generation is collected once it grows 50% past what the last
 *   full GC left alive; with both flags ~215 MB, same speed.
 *
 * No old-space cap: a big intraday page must never crash the process to save memory. (`--optimize-for-size`
 * reached ~160 MB but halved the speed.)
 *
 * They cannot be set from inside the process: V8 reads them when the heap is created.
 */
export const NODE_HEAP_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--heap-growing-percent=50'];

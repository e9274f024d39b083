/**
 * The V8 heap flags every launcher of validic-sync passes to `node`: the npm scripts (`cli`, `demo`,
 * `start`), the Dockerfile's entrypoint and the CLI's shebang (so the `bin` built from it).
 * Why and how: README.md, "`heap-flags.ts`".
 */
export const NODE_HEAP_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--heap-growing-percent=50'];

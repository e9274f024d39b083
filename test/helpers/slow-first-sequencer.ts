/**
 * The order in which `npm test` starts its files, so that three workers end together.
 *
 * Vitest starts the files that took longest in its last run first (its cache of results), which packs
 * the workers well. A fresh clone, such as CI's, has no such cache, and Vitest falls back to the largest
 * file first. File size says little about time here: the slowest files are small e2e files that spawn
 * `npm` or a worker fleet (installed-bin, env-file, budget), and they started last in CI and were the
 * last to finish. Without a cache this sequencer starts the end-to-end files first (then integration,
 * then the rest), each tier largest first, and the many short files fill the workers at the end. With a
 * cache, Vitest's own order stands. (The fault suite has its own config and keeps Vitest's order.)
 * Measured in a clean-clone `.ci/run`: `npm test` took 354 s with this order, 626–656 s in CI without it.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Folders in the order they start; a folder not listed starts after them. */
const TIERS = ['/test/e2e/', '/test/integration/'];

function tier(spec: TestSpecification): number {
  const index = TIERS.findIndex((folder) => spec.moduleId.includes(folder));
  return index === -1 ? TIERS.length : index;
}

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const cached = files.every((spec) => this.ctx.cache.getTestSpecificationResult(spec) !== undefined);
    if (cached) return sorted;
    // Array.prototype.sort is stable: within a project and tier, Vitest's order (largest first) stays.
    return sorted.sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        (a.project.name < b.project.name ? -1 : a.project.name > b.project.name ? 1 : 0) ||
        tier(a) - tier(b),
    );
  }
}

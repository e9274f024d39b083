/** Bad or missing settings, every problem at once: the CLI prints them and exits 2. */
import { UserFacingError } from './user-facing-error.ts';

export interface ConfigProblem {
  /** Setting path, e.g. `organizations[0].token`, with its env name when it has one. */
  key: string;
  message: string;
  fix: string;
}

export class ConfigError extends UserFacingError {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    super(
      `Invalid configuration:\n${problems.map((p) => `  - ${p.key}: ${p.message}. Fix: ${p.fix}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

/**
 * Makes the directory where fault scenarios record their counts, hands it to the test files
 * (`inject('faultResultsDir')`) and to the reporter (environment), and removes it at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { FAULT_RESULTS_ENV } from './fault-results.ts';

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'validic-faults-'));
  process.env[FAULT_RESULTS_ENV] = dir;
  project.provide('faultResultsDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}

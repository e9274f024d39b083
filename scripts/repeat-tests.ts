/**
 * Runs test files many rounds in a row beside a CPU-bound process, to find the test that passes one run
 * in twenty. Each round is one `vitest run` of all the files (three at a time, as `npm test` runs them);
 * the burner takes one of the machine's cores for the whole run, as a shared CI machine might.
 *
 *   node scripts/repeat-tests.ts --rounds 20 test/e2e/audit.test.ts test/e2e/budget.test.ts
 *
 * Prints one line per round, then each file's passed rounds out of the rounds run, and exits 1 when any
 * round of any file failed. The JSON report of a failed round is kept (its path is printed) so the
 * failure can be read afterwards.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';

interface VitestJsonReport {
  testResults: { name: string; status: string; assertionResults: { fullName: string; status: string }[] }[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '20' }, 'no-burner': { type: 'boolean', default: false } },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1 || positionals.length === 0) {
  process.stderr.write('usage: node scripts/repeat-tests.ts [--rounds N] [--no-burner] <test files...>\n');
  process.exit(2);
}

const reports = mkdtempSync(join(tmpdir(), 'repeat-tests-'));
const burner = values['no-burner']
  ? undefined
  : spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' });
process.on('exit', () => burner?.kill());

/** A round that runs this long has hung (a round of the e2e folder takes about three minutes). */
const ROUND_TIMEOUT_MS = 20 * 60_000;

/** Runs vitest in its own process group, so that a hung round can be killed with all its forks. */
function runVitest(args: string[]): Promise<boolean> {
  const child = spawn(join('node_modules', '.bin', 'vitest'), args, {
    stdio: 'ignore',
    detached: true,
    env: { ...process.env, CI: 'true' },
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      resolve(false);
    }, ROUND_TIMEOUT_MS);
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

const passedRounds = new Map<string, number>(positionals.map((file) => [file, 0]));
const failures: string[] = [];
for (let round = 1; round <= rounds; round++) {
  const outputFile = join(reports, `round-${round}.json`);
  const startedAt = Date.now();
  const finished = await runVitest(['run', '--reporter=json', `--outputFile=${outputFile}`, ...positionals]);
  const seconds = Math.round((Date.now() - startedAt) / 1000);
  let report: VitestJsonReport;
  try {
    report = JSON.parse(readFileSync(outputFile, 'utf8')) as VitestJsonReport;
  } catch {
    const why = finished
      ? 'vitest wrote no report'
      : `vitest still running after ${ROUND_TIMEOUT_MS / 60_000} min`;
    failures.push(`round ${round}: ${why}`);
    process.stdout.write(`round ${round}: ${why}, ${seconds} s\n`);
    continue;
  }
  const failedFiles: string[] = [];
  for (const file of positionals) {
    const result = report.testResults.find((entry) => relative(process.cwd(), entry.name) === file);
    const passed =
      result !== undefined &&
      result.status === 'passed' &&
      result.assertionResults.length > 0 &&
      result.assertionResults.every((test) => test.status === 'passed' || test.status === 'skipped');
    if (passed) passedRounds.set(file, passedRounds.get(file)! + 1);
    else {
      failedFiles.push(file);
      const failedTests = result?.assertionResults.filter((test) => test.status === 'failed') ?? [];
      failures.push(
        `round ${round}: ${file}: ${failedTests.map((test) => test.fullName).join('; ') || 'no result'} (${outputFile})`,
      );
    }
  }
  process.stdout.write(
    `round ${round}: ${failedFiles.length === 0 ? 'all passed' : `failed ${failedFiles.join(', ')}`}, ${seconds} s\n`,
  );
}

process.stdout.write('\n');
for (const [file, passed] of passedRounds) process.stdout.write(`${file}: ${passed}/${rounds} passed\n`);
for (const failure of failures) process.stdout.write(`${failure}\n`);
process.exit(failures.length === 0 ? 0 : 1);

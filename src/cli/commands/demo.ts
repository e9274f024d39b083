/** `validic-sync demo`: sandbox + warehouse + a full sync + a summary (see src/demo/run-demo.ts). */
import type { Command } from 'commander';
import type { CommandRunner } from '../command-runner.ts';

export function registerDemo(program: Command, run: CommandRunner): void {
  program
    .command('demo')
    .description(
      'run the whole product against the built-in sandbox and show what landed (no credentials needed)',
    )
    .action(() =>
      run(async ({ config, log, signal, print }) => {
        const { runDemo } = await import('../../demo/run-demo.ts');
        // The demo's own output tells the story; logs stay quiet unless LOG_LEVEL asks for them. Its
        // stream step disconnects on purpose: the gap warning it causes is the step's line, not a log.
        const demoLog = process.env.LOG_LEVEL ? log : log.child({}, { level: 'warn' });
        const streamLog = process.env.LOG_LEVEL ? log : log.child({}, { level: 'error' });
        await runDemo({
          log: demoLog,
          streamLog,
          print,
          signal,
          databaseUrl: config.databaseUrl,
          redisUrl: config.redisUrl,
        });
      }),
    );
}

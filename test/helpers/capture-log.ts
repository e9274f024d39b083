/**
 * The product's logger (redaction and all) writing into an array instead of stdout, for tests that
 * read what a worker logged: each entry is one JSON line as pino wrote it.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log/logger.ts';

export function captureLog(level: string): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger({
    level,
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    }),
  });
  return { log, lines };
}

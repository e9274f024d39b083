/**
 * Progress for long commands: a cli-progress bar on a terminal, plain lines otherwise (CI logs, pipes),
 * at most one line every `plainEveryMs` so a log stays readable. It counts one unit (`windows`, `cells`)
 * over the same unit: what is done of what was planned.
 */
import { SingleBar } from 'cli-progress';

export interface Progress {
  setTotal(total: number): void;
  update(done: number, detail: string): void;
  stop(): void;
}

export interface ProgressOptions {
  label: string;
  /** What is counted, plural: `windows` (default), `cells`. */
  unit?: string;
  stream?: NodeJS.WriteStream;
  /** Force plain lines even on a terminal (tests). */
  plain?: boolean;
  plainEveryMs?: number;
}

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  const unit = options.unit ?? 'windows';
  if (stream.isTTY && !options.plain && !process.env.CI) return barProgress(options.label, unit, stream);
  return plainProgress(options.label, unit, stream, options.plainEveryMs ?? 2000);
}

function barProgress(label: string, unit: string, stream: NodeJS.WriteStream): Progress {
  const bar = new SingleBar({
    stream,
    format: `${label} [{bar}] {percentage}% {value}/{total} ${unit} | {detail}`,
    hideCursor: true,
    clearOnComplete: false,
  });
  let started = false;
  return {
    setTotal(total) {
      if (!started) {
        bar.start(total, 0, { detail: '' });
        started = true;
      } else bar.setTotal(total);
    },
    update(done, detail) {
      if (started) bar.update(done, { detail });
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

function plainProgress(
  label: string,
  unit: string,
  stream: NodeJS.WritableStream,
  everyMs: number,
): Progress {
  let total = 0;
  let last = 0;
  let lastLine = '';
  const write = (done: number, detail: string) => {
    lastLine = `${label}: ${done}/${total} ${unit}${detail ? ` | ${detail}` : ''}`;
    stream.write(`${lastLine}\n`);
  };
  let done = 0;
  let detail = '';
  return {
    setTotal(value) {
      total = value;
    },
    update(value, text) {
      done = value;
      detail = text;
      const now = Date.now();
      if (now - last >= everyMs) {
        last = now;
        write(done, detail);
      }
    },
    stop() {
      const finalLine = `${label}: ${done}/${total} ${unit}${detail ? ` | ${detail}` : ''}`;
      if (finalLine !== lastLine) write(done, detail);
    },
  };
}

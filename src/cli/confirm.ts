/**
 * A yes/no question on the terminal, for work that is costly to start by mistake. Asked only when a
 * person can answer: stdin is a terminal and `CI` is not set (CI has no stdin, and a script that pipes
 * input must say `--yes`).
 */
import { createInterface } from 'node:readline/promises';

export interface ConfirmStreams {
  input?: NodeJS.ReadableStream & { isTTY?: boolean };
  output?: NodeJS.WritableStream;
}

export function canAsk(input: { isTTY?: boolean } = process.stdin): boolean {
  return input.isTTY === true && !process.env.CI;
}

/** Asks `question` with `[y/N]`; true only for y or yes. An input that ends answers no. */
export async function confirm(question: string, streams: ConfirmStreams = {}): Promise<boolean> {
  const rl = createInterface({
    input: streams.input ?? process.stdin,
    output: streams.output ?? process.stderr,
    terminal: false,
  });
  try {
    const closed = new Promise<string>((resolve) => rl.once('close', () => resolve('')));
    const answer = await Promise.race([rl.question(`${question} [y/N] `), closed]);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}

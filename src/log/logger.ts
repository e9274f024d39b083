/**
 * pino, JSON lines on stderr (stdout is kept for command output such as the sandbox's first line).
 * Every string in a log object passes through secret redaction, and so does the final line, so a token
 * cannot surface through a message, an error's stack or a nested field.
 */
import { hostname } from 'node:os';
import { type Logger, type LoggerOptions, pino } from 'pino';
import { redactKnownSecrets, redactValue } from '../redact/redact-secrets.ts';

export type { Logger };

export interface CreateLoggerOptions {
  level?: string;
  /** Where lines go; default stderr. Tests pass a stream to capture output. */
  destination?: NodeJS.WritableStream;
  base?: Record<string, unknown>;
}

export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const pinoOptions: LoggerOptions = {
    level: options.level ?? 'info',
    // pino's usual pid and hostname, so lines from a fleet of workers say which process wrote them.
    base: { pid: process.pid, hostname: hostname(), ...options.base },
    formatters: {
      log: (object) => redactValue(object),
    },
    hooks: {
      logMethod(args, method) {
        const redacted = args.map((a) => (typeof a === 'string' ? redactKnownSecrets(a) : a));
        return method.apply(this, redacted as Parameters<typeof method>);
      },
    },
    serializers: {
      err: (err: unknown) => redactValue(pino.stdSerializers.err(err as Error)),
      error: (err: unknown) => redactValue(pino.stdSerializers.err(err as Error)),
    },
  };
  const destination = (options.destination ??
    pino.destination({ fd: 2, sync: false })) as pino.DestinationStream & {
    flush?: () => void;
  };
  // The last line of defence: whatever path a secret took into the line (an Error passed as the first
  // argument, a custom serializer), the serialized line itself is redacted before it is written.
  const redactingDestination = {
    write: (line: string) => destination.write(redactKnownSecrets(line)),
    flush: () => destination.flush?.(),
  };
  return pino(pinoOptions, redactingDestination);
}

/** A logger that discards everything (for library defaults and tests that do not look at logs). */
export const silentLogger: Logger = pino({ level: 'silent' });

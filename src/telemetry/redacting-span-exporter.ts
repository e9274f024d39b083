/**
 * The last line of defence for traces, as the logger's final redaction is for logs: every span leaves
 * the process with its name, attributes, event attributes and status message passed through the same
 * redaction as log lines, so a token in a URL (`url.full`, an exception message) is never exported.
 */
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { redactKnownSecrets, redactValue } from '../redact/redact-secrets.ts';

/** A copy of the span (methods such as `spanContext()` still come from the original) with secrets masked. */
export function redactSpan(span: ReadableSpan): ReadableSpan {
  return Object.create(span, {
    name: { value: redactKnownSecrets(span.name), enumerable: true },
    attributes: { value: redactValue(span.attributes), enumerable: true },
    events: {
      value: span.events.map((event) => ({
        ...event,
        ...(event.attributes ? { attributes: redactValue(event.attributes) } : {}),
      })),
      enumerable: true,
    },
    status: {
      value: span.status.message
        ? { ...span.status, message: redactKnownSecrets(span.status.message) }
        : span.status,
      enumerable: true,
    },
  }) as ReadableSpan;
}

export class RedactingSpanExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  constructor(inner: SpanExporter) {
    this.#inner = inner;
  }
  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.#inner.export(spans.map(redactSpan), resultCallback);
  }
  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

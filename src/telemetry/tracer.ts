/**
 * The product's spans, through the OpenTelemetry API. Until `startTracing` registers an SDK, the API
 * hands out non-recording spans: the calls below cost a function call and no allocation worth
 * measuring (bench/tracing-overhead.ts), so they stay in the hot paths whether tracing is on or off.
 *
 * Spans: `push.receive` (a push notification), `job <name>` (one job run, inline or on BullMQ; on BullMQ
 * it is a child of bullmq-otel's consume span, which continues the trace of whoever enqueued the job),
 * the undici instrumentation's HTTP spans, `warehouse.apply_batch` (one batch and its progress) and
 * `warehouse.copy` (one COPY into a table).
 */
import { type Attributes, type Span, SpanStatusCode, trace } from '@opentelemetry/api';
import { VERSION } from '../runtime/version.ts';

const tracer = trace.getTracer('validic-sync', VERSION);

export const jobAttributes = (jobId: string, attempt: number): Attributes => ({
  'validic.job.id': jobId,
  'validic.job.attempt': attempt,
});

/** Runs `fn` inside a new active span; an error is recorded on the span and rethrown. */
export function withSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
      throw error;
    } finally {
      span.end();
    }
  });
}

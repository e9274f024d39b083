/**
 * Optional OpenTelemetry tracing.
 *
 * On when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
 * `OTEL_SDK_DISABLED` is not `true`: spans go by OTLP over HTTP (the exporter reads the usual
 * `OTEL_EXPORTER_OTLP_*` variables: headers, timeout). Off, none of the SDK is even imported.
 *
 * What it registers: a tracer provider with the batch span processor, AsyncLocalStorage context (so a
 * span started in a job is the parent of the HTTP requests and the loader's work it awaits), W3C trace
 * context propagation, and the undici instrumentation (HTTP spans from undici's diagnostics channels,
 * which works for ES modules without loader hooks). BullMQ propagates the trace through jobs with
 * bullmq-otel (in `start-tracing.ts`). PostgreSQL and Redis are not auto-instrumented: their
 * instrumentations patch CommonJS `require`, which an ES-module program does not go through, so the
 * loader's own `warehouse.apply_batch` and `warehouse.copy` spans stand for the database work.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import type { BullMQOtel } from 'bullmq-otel';
import { redactUrl } from '../redact/redact-secrets.ts';
import { VERSION } from '../runtime/version.ts';
import { RedactingSpanExporter } from './redacting-span-exporter.ts';

export interface Tracing {
  enabled: boolean;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
}

let bullmq: BullMQOtel | undefined;

/** BullMQ's `telemetry` option while tracing is on; undefined (no overhead) while it is off. */
export function bullmqTelemetry(): BullMQOtel | undefined {
  return bullmq;
}

export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (/^true$/i.test(env.OTEL_SDK_DISABLED ?? '')) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts tracing if the environment asks for it, or with the given exporter (tests pass an in-memory
 * one). Either way spans are redacted on their way out.
 */
export async function startTracing(
  options: { env?: NodeJS.ProcessEnv; exporter?: SpanExporter } = {},
): Promise<Tracing> {
  const env = options.env ?? process.env;
  if (!options.exporter && !tracingRequested(env)) return { enabled: false, shutdown: async () => {} };

  const [{ TracerProvider, BatchSpanProcessor }, { AsyncLocalStorageContextManager }, core, resources] =
    await Promise.all([
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
      import('@opentelemetry/resources'),
    ]);
  const exporter =
    options.exporter ?? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  const spanProcessor = new BatchSpanProcessor({ exporter: new RedactingSpanExporter(exporter) });
  const provider = new TracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? 'validic-sync',
      'service.version': VERSION,
    }),
    spanProcessors: [spanProcessor],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);

  const [{ registerInstrumentations }, { UndiciInstrumentation }, { BullMQOtel }] = await Promise.all([
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-undici'),
    import('bullmq-otel'),
  ]);
  const unregister = registerInstrumentations({
    // The URL is set redacted from the start (the exporter redacts again on the way out).
    instrumentations: [
      new UndiciInstrumentation({
        startSpanHook: (request) => {
          const url = new URL(request.path, request.origin);
          return { 'url.full': redactUrl(url), 'url.query': redactUrl(url.search) };
        },
      }),
    ],
  });
  bullmq = new BullMQOtel({ tracerName: 'validic-sync', version: VERSION });

  return {
    enabled: true,
    async shutdown() {
      unregister();
      bullmq = undefined;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

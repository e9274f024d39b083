/** Spans leave the process redacted: a token in a URL attribute, an event or a status never reaches an exporter. */
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { RedactingSpanExporter } from '../../src/telemetry/redacting-span-exporter.ts';

const spanContext = { traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 };
const span = {
  name: 'GET https://api.example/x?token=tok-span-1',
  attributes: {
    'url.full': 'https://api.example/x?token=tok-span-1&limit=5',
    'http.response.status_code': 200,
  },
  events: [
    {
      name: 'exception',
      time: [0, 0],
      attributes: { 'exception.message': 'failed ?access_token=tok-span-2' },
    },
  ],
  status: { code: 2, message: 'GET /y?token=tok-span-3 failed' },
  spanContext: () => spanContext,
} as unknown as ReadableSpan;

describe('RedactingSpanExporter', () => {
  it('masks secrets in the name, attributes, events and status, and keeps everything else', async () => {
    const inner = new InMemorySpanExporter();
    const exporter = new RedactingSpanExporter(inner);
    await new Promise((resolve) => exporter.export([span], resolve));
    const [out] = inner.getFinishedSpans();
    expect(JSON.stringify({ ...out, events: out!.events, status: out!.status })).not.toMatch(/tok-span/);
    expect(out!.attributes['url.full']).toBe('https://api.example/x?token=[REDACTED]&limit=5');
    expect(out!.attributes['http.response.status_code']).toBe(200);
    expect(out!.spanContext()).toBe(spanContext);
    // The original span is untouched (other processors may still read it).
    expect(span.attributes['url.full']).toContain('tok-span-1');
  });
});

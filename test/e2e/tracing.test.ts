/**
 * OpenTelemetry, end to end: the real CLI with `OTEL_EXPORTER_OTLP_ENDPOINT` pointed at an OTLP receiver
 * on loopback sends traces in which a job's span is the parent of its HTTP requests to the platform and
 * of the loader's transaction and COPY; without the variable it sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);

/** The chain of a span's ancestors' names, nearest first. */
function ancestors(span: ReceivedSpan, spans: ReceivedSpan[]): string[] {
  const names: string[] = [];
  for (let parent = spans.find((s) => s.spanId === span.parentSpanId); parent; ) {
    names.push(parent.name);
    const next = spans.find((s) => s.spanId === parent!.parentSpanId);
    parent = next;
  }
  return names;
}

describe('tracing', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  let receiver: OtlpReceiver;

  beforeAll(async () => {
    // Enough records per user and resource that the loader COPYs (100 new records and up).
    sandbox = await startSandbox({ seed: 21, users: 2, days: 30 });
    db = await createTestDatabase();
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
    await receiver?.close();
  });

  it('is off without an OTLP endpoint', async () => {
    const result = await runCli(
      ['backfill', '--from', day(10), '--to', day(0), '--no-connections'],
      sandboxEnv(sandbox, { DATABASE_URL: db.url }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(receiver.spans).toEqual([]);
  });

  it('traces a job through its HTTP requests to its COPY', async () => {
    const result = await runCli(
      ['backfill', '--from', day(40), '--to', day(0), '--no-connections', '--restart'],
      sandboxEnv(sandbox, {
        DATABASE_URL: db.url,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: 'validic-sync-test',
      }),
    );
    expect(result.code, result.stderr).toBe(0);
    // The exporter flushes when the command ends.
    const spans = receiver.spans;
    const copy = spans.find(
      (s) => s.name === 'warehouse.copy' && ancestors(s, spans).includes('job records.poll'),
    );
    expect(copy, spans.map((s) => s.name).join(', ')).toBeDefined();
    expect(ancestors(copy!, spans).slice(0, 2)).toEqual(['warehouse.apply_batch', 'job records.poll']);
    const pollJob = spans.find(
      (s) => s.spanId === spans.find((p) => p.spanId === copy!.parentSpanId)!.parentSpanId,
    )!;
    expect(pollJob.traceId).toBe(copy!.traceId);
    // The same job's requests to the platform are its children.
    const requests = spans.filter((s) => s.parentSpanId === pollJob.spanId && /^GET/.test(s.name));
    expect(requests.length).toBeGreaterThan(0);
    // And nothing exported carries the token.
    expect(JSON.stringify(spans)).not.toContain(sandbox.token);
  });
});

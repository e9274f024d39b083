/**
 * OpenTelemetry, end to end: the real CLI with `OTEL_EXPORTER_OTLP_ENDPOINT` pointed at an OTLP receiver
 * on loopback sends traces in which a job's span is the parent of its HTTP requests to the platform and
 * of the loader's transaction and COPY; without the variable it sends nothing. A running worker traces a
 * push notification through BullMQ to the job it queued, its request and its write.
 */
import { describe, expect, it } from 'vitest';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { day } from '../helpers/fixtures/index.ts';
import { type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { createTestRedis } from '../helpers/redis.ts';
import { useBeforeAll, useSandbox } from '../helpers/use-before-all.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';
import { waitForStep } from '../helpers/wait-for-step.ts';
import { startWorkerChild, workerChildEnv } from '../helpers/worker-fleet.ts';

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
  // Enough records per user and resource that the loader COPYs (100 new records and up).
  const sandbox = useSandbox({ seed: 21, users: 2, days: 30 });
  const db = useTestDatabase();
  const receiver = useBeforeAll(startOtlpReceiver, (r) => r.close());

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

  it('traces a push through the queue to its retrieval and its write', { timeout: 90_000 }, async () => {
    const testRedis = createTestRedis('tracing');
    const worker = await startWorkerChild(
      workerChildEnv(sandbox, db.url, testRedis, {
        VALIDIC_APPLICATION_SECRET: sandbox.applicationSecret,
        PUSH_COALESCE_SECONDS: '1',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '200',
      }),
    );
    try {
      sandbox.control.registerPushUrl(worker.pushUrl!);
      const [user] = sandbox.truth.legacyUsers();
      sandbox.control.addLegacyRecord({ object: 'fitness', user_id: user!._id });
      await sandbox.control.flushNotifications();
      sandbox.control.unregisterPushUrl(worker.pushUrl!);
      const chain = () => {
        const spans = receiver.spans;
        const write = spans.find(
          (s) =>
            s.name === 'warehouse.apply_batch' &&
            ancestors(s, spans).includes('job legacy.fetch') &&
            ancestors(s, spans).includes('push.receive'),
        );
        return write ? ancestors(write, spans) : undefined;
      };
      await waitForStep(
        'a push traced through legacy.fetch to its write',
        () => expect(chain()).toBeDefined(),
        { timeout: 60_000, interval: 200 },
      );
      const names = chain()!;
      expect(names[0]).toBe('job legacy.fetch');
      expect(names.at(-1)).toBe('push.receive');
      const push = receiver.spans.find((s) => s.name === 'push.receive')!;
      const job = receiver.spans.find((s) => s.traceId === push.traceId && s.name === 'job legacy.fetch')!;
      expect(receiver.spans.some((s) => s.parentSpanId === job.spanId && /^GET/.test(s.name))).toBe(true);
      expect(JSON.stringify(receiver.spans)).not.toContain(sandbox.legacyToken);
      expect(JSON.stringify(receiver.spans)).not.toContain(sandbox.applicationSecret);
    } finally {
      await worker.stop();
      await testRedis.cleanup();
    }
  });
});

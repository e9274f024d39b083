/**
 * The cost of tracing on the loader, the hottest traced path (`warehouse.apply_batch` and one
 * `warehouse.copy` per table per batch):
 * - `tracing-on-cost`: 1 − (records/s with tracing on ÷ records/s with it off), the same batches into
 *   fresh databases, alternating off/on over the rounds and keeping each side's best. On means the SDK
 *   with its batch processor and the redacting exporter, exporting to a sink that drops the spans (the
 *   network to a collector is not the product's cost). Target ≤ 0.05 ("a few percent").
 * - `tracing-off-cost`: with no SDK registered, the time of the API's non-recording spans the loader
 *   opens per batch (measured over many calls) ÷ the time of a batch. Target ≤ 0.001.
 * Run: `node bench/tracing-overhead.ts [--quick]`.
 */
import { ExportResultCode } from '@opentelemetry/core';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { sql } from 'kysely';
import { startTracing } from '../src/telemetry/start-tracing.ts';
import { withSpan } from '../src/telemetry/tracer.ts';
import { applyBatch } from '../src/warehouse/loader/apply-batch.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { loaderInput } from './helpers/loader-data.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const ROUNDS = quick ? 2 : 3;
let exported = 0;
const sink: SpanExporter = {
  export(spans, done) {
    exported += spans.length;
    done({ code: ExportResultCode.SUCCESS });
  },
  shutdown: async () => {},
};

const input = await loaderInput(quick ? 2 : 5);

async function loadSeconds(): Promise<number> {
  const db = await createTestDatabase();
  try {
    await sql`checkpoint`.execute(db.warehouse.db);
    const started = process.hrtime.bigint();
    for (const { batch, checkpoint } of input.batches) await applyBatch(db.warehouse, batch, checkpoint);
    return secondsSince(started);
  } finally {
    await db.drop();
  }
}

// Off: the API alone. A batch opens one apply_batch span and up to a handful of copy spans.
const CALLS = 200_000;
const noop = async () => 0;
let started = process.hrtime.bigint();
for (let i = 0; i < CALLS; i++) await withSpan('warehouse.copy', { 'db.collection.name': 't' }, noop);
const spanSecondsOff = secondsSince(started) / CALLS;
started = process.hrtime.bigint();
for (let i = 0; i < CALLS; i++) await noop();
const callSeconds = secondsSince(started) / CALLS;
const SPANS_PER_BATCH = 8;

const off: number[] = [];
const on: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  off.push(await loadSeconds());
  const tracing = await startTracing({ exporter: sink });
  on.push(await loadSeconds());
  await tracing.shutdown();
}
const offSeconds = Math.min(...off);
const onSeconds = Math.min(...on);
const onCost = 1 - offSeconds / onSeconds;
const batchSeconds = offSeconds / input.batches.length;
const offCost = (SPANS_PER_BATCH * Math.max(0, spanSecondsOff - callSeconds)) / batchSeconds;

printFigure({
  name: 'tracing-on-cost',
  value: round(Math.max(0, onCost), 3),
  target: '≤ 0.05',
  ok: onCost <= 0.05 && exported > 0,
  raw: {
    records: input.records,
    batches: input.batches.length,
    seconds_off_per_round: off.map((t) => round(t, 3)),
    seconds_on_per_round: on.map((t) => round(t, 3)),
    spans_exported: exported,
  },
});
printFigure({
  name: 'tracing-off-cost',
  value: Number(offCost.toExponential(1)),
  target: '≤ 0.001',
  ok: offCost <= 0.001,
  raw: {
    noop_span_ns: round((spanSecondsOff - callSeconds) * 1e9, 1),
    spans_per_batch_assumed: SPANS_PER_BATCH,
    batch_ms: round(batchSeconds * 1000, 2),
  },
});

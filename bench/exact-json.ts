/**
 * What reading every number exactly costs (src/pipeline/exact-json.ts). Run: `node bench/exact-json.ts [--quick]`.
 *
 * On the stream's mix (the sandbox's events, as bench/stream-throughput.ts serves them, one JSON text per
 * event): the time `parseJsonExactly` adds to `JSON.parse` per event, divided by the time per event of
 * loading the same events (`applyBatch` of the parsed payloads, batches of 1,000 frames with a cursor, into
 * a fresh database), measured in the same run. Target ≤ 0.05: the exact parse is a small share of the
 * write path. Also printed: the parse ratio on the mix (its texts hold no number a double would change,
 * so only the scan runs); on the same texts each given a long number a double gives back as written
 * (`72.39999999999999`: the scan flags it, the token check clears it); and each given a number a
 * double would change (`12345678901234567890`: every text takes the reviver, the worst case). Parse
 * times are the best of alternating rounds.
 */
import { parseJsonExactly } from '../src/pipeline/exact-json.ts';
import { startSandbox } from '../src/sandbox/index.ts';
import { applyBatch } from '../src/warehouse/loader/apply-batch.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const TARGET = 0.05;
const EVENTS = quick ? 5_000 : 20_000;
const PARSE_ROUNDS = quick ? 5 : 9;
const BATCH = 1_000;

const sandbox = await startSandbox({ seed: 3, users: 20, days: 30, now: new Date('2026-03-15T12:00:00Z') });
const templates = sandbox.truth.events().map((e) => e.payload as Record<string, unknown>);
await sandbox.close();
const texts = Array.from({ length: EVENTS }, (_, i) => {
  const t = templates[i % templates.length]!;
  return JSON.stringify({ ...t, id: `bench-${i}-${String(t.id)}` });
});
const longExact = texts.map((t) => `${t.slice(0, -1)},"long":72.39999999999999}`);
// The worst case: every text holds a number a double would change.
const wide = texts.map((t) => `${t.slice(0, -1)},"wide":12345678901234567890}`);

/** Best time over alternating rounds of each parse of `input`, seconds. */
function bestParseTimes(input: readonly string[]): { plain: number; exact: number } {
  const plain: number[] = [];
  const exact: number[] = [];
  for (let r = 0; r < PARSE_ROUNDS; r++) {
    let started = process.hrtime.bigint();
    for (const t of input) JSON.parse(t);
    plain.push(secondsSince(started));
    started = process.hrtime.bigint();
    for (const t of input) parseJsonExactly(t);
    exact.push(secondsSince(started));
  }
  return { plain: Math.min(...plain), exact: Math.min(...exact) };
}

const mix = bestParseTimes(texts);
const long = bestParseTimes(longExact);
const worst = bestParseTimes(wide);

const db = await createTestDatabase();
let loadSeconds: number;
let inserted = 0;
try {
  const payloads = texts.map((t) => parseJsonExactly(t));
  const started = process.hrtime.bigint();
  for (let i = 0; i < payloads.length; i += BATCH) {
    const result = await applyBatch(
      db.warehouse,
      {
        orgId: 'bench-org',
        arrivedVia: 'stream',
        items: payloads.slice(i, i + BATCH).map((raw) => ({ kind: 'frame' as const, raw })),
      },
      { cursors: [{ key: 'bench', value: { i } }] },
    );
    inserted += result.inserted;
  }
  loadSeconds = secondsSince(started);
} finally {
  await db.drop();
}

const perEvent = (seconds: number) => (seconds / EVENTS) * 1e6;
const added = perEvent(mix.exact - mix.plain);
const cost = (mix.exact - mix.plain) / loadSeconds;
printFigure({
  name: 'exact-json-cost',
  value: round(cost, 3),
  target: `≤ ${TARGET}`,
  ok: cost <= TARGET,
  raw: {
    events: EVENTS,
    text_bytes_mean: Math.round(texts.reduce((sum, t) => sum + t.length, 0) / EVENTS),
    json_parse_us_per_event: round(perEvent(mix.plain), 2),
    exact_parse_us_per_event: round(perEvent(mix.exact), 2),
    added_us_per_event: round(added, 2),
    load_us_per_event: round(perEvent(loadSeconds), 1),
    inserted,
    exact_vs_json_parse_mix: round(mix.exact / mix.plain),
    exact_vs_json_parse_every_text_long_exact: round(long.exact / long.plain),
    exact_vs_json_parse_every_text_changed: round(worst.exact / worst.plain),
    worst_case_cost: round((worst.exact - worst.plain) / loadSeconds, 3),
  },
});

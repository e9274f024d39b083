/**
 * Sandbox serving throughput: records per second for 1,000-record pages over loopback, with the JSON
 * parsed on the client (undici). The sandbox runs in a worker thread, as it would in its own process,
 * so server and client each get a core. Run: `node bench/sandbox-throughput.ts`.
 * Prints `bench sandbox-throughput: <N> records/s (target 20000) ok|short`.
 */
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { Agent, request } from 'undici';
import { startSandbox } from '../src/sandbox/index.ts';

const TARGET = 20_000;
const REQUESTS = 400;
// One connection reading pages back to back, as a pager does. (Several concurrent 700 kB bodies on
// loopback measured far slower per record on this machine, on the client side.)
const CONCURRENCY = 1;

async function serve(): Promise<void> {
  // One user whose 30-day measurement window holds about 1,000 records.
  const sandbox = await startSandbox({
    seed: 1,
    users: 1,
    days: 30,
    now: new Date('2026-03-15T12:00:00Z'),
    mix: { measurement: 34, nutrition: 0, intraday: 0, summary: 0, workout: 0, sleep: 0, cgm: 0 },
  });
  const uid = sandbox.truth.users()[0]!.uid;
  const url = `${sandbox.apiUrl}/organizations/${sandbox.orgId}/users/${uid}/measurements?token=${sandbox.token}&start_date=2026-02-14&end_date=2026-03-15`;
  parentPort!.on('message', async () => {
    await sandbox.close();
    parentPort!.close();
  });
  parentPort!.postMessage(url);
}

async function measure(): Promise<void> {
  const worker = new Worker(new URL(import.meta.url));
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const dispatcher = new Agent({ connections: CONCURRENCY });
  const fetchPage = async (): Promise<number> => {
    const res = await request(url, { dispatcher });
    const body = (await res.body.json()) as { data: unknown[] };
    return body.data.length;
  };
  for (let i = 0; i < CONCURRENCY * 2; i++) await fetchPage(); // warm-up
  let records = 0;
  let issued = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (issued < REQUESTS) {
        issued++;
        records += await fetchPage();
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const rate = Math.round(records / seconds);
  console.log(
    `bench sandbox-throughput: ${rate} records/s (target ${TARGET}) ${rate >= TARGET ? 'ok' : 'short'}`,
  );
  await dispatcher.close();
  worker.postMessage('stop');
  await new Promise((resolve) => worker.once('exit', resolve));
}

if (isMainThread) await measure();
else await serve();

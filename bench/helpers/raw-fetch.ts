/**
 * The HTTP limit a backfill is compared with: the same pages fetched with a bare undici Agent and
 * JSON.parse, with the same concurrency, and nothing else (no retries, no budget, no validation).
 * Returns the parsed items so the COPY limit can be measured on exactly what was fetched.
 */
import { Agent, request } from 'undici';
import type { RawItem } from '../../src/pipeline/batch.ts';
import { resourcePath, toV2Resource } from '../../src/validic/platform-limits.ts';
import { buildUrl } from '../../src/validic/requests.ts';
import type { SandboxInfo } from './sandbox-thread.ts';

export interface WindowSpec {
  uid: string | null;
  resource: string;
  startDate: string;
  endDate: string;
}

export interface RawFetchResult {
  seconds: number;
  requests: number;
  bytes: number;
  records: number;
  items: RawItem[];
}

type Task = () => Promise<void>;

export async function rawFetch(
  sandbox: Pick<SandboxInfo, 'apiUrl' | 'orgId' | 'token'>,
  windows: readonly WindowSpec[],
  concurrency: number,
): Promise<RawFetchResult> {
  const dispatcher = new Agent({ connections: concurrency });
  const url = (segments: string[], query: Record<string, string | number>) =>
    buildUrl(sandbox.apiUrl, ['organizations', sandbox.orgId, ...segments], {
      ...query,
      token: sandbox.token,
    });
  const items: RawItem[] = [];
  let requests = 0;
  let bytes = 0;
  let records = 0;
  const get = async (target: URL): Promise<Record<string, unknown>> => {
    requests++;
    const res = await request(target, { dispatcher });
    const text = await res.body.text();
    bytes += text.length;
    if (res.statusCode !== 200) throw new Error(`GET ${target.pathname}: ${res.statusCode}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const list = (body: Record<string, unknown>) => (Array.isArray(body.data) ? (body.data as unknown[]) : []);

  const tasks: Task[] = [
    async () => {
      for (let offset = 0; ; offset++) {
        const page = list(await get(url(['users'], { limit: 1000, offset })));
        for (const raw of page) items.push({ kind: 'user', raw });
        if (page.length < 1000) return;
      }
    },
  ];
  for (const w of windows) {
    if (w.resource === 'connections') {
      tasks.push(async () => {
        for (let page = 0; ; page++) {
          const events = list(
            await get(
              url(['connections'], { start_date: w.startDate, end_date: w.endDate, page, limit: 1000 }),
            ),
          );
          for (const raw of events) items.push({ kind: 'connection_event', raw });
          if (events.length < 1000) return;
        }
      });
    } else {
      tasks.push(async () => {
        const path = resourcePath(toV2Resource(w.resource));
        const page = list(
          await get(url(['users', w.uid!, path], { start_date: w.startDate, end_date: w.endDate })),
        );
        records += page.length;
        for (const raw of page) items.push({ kind: 'record', raw });
      });
    }
  }

  const started = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await dispatcher.close();
  return { seconds, requests, bytes, records, items };
}

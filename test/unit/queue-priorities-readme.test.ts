/**
 * The queue README's list of priorities is the catalog's (each job's `priority`, in its file): change both
 * together.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jobCatalog } from '../../jobs/index.ts';
import { FANOUT_PRIORITIES } from '../../jobs/records-recent.ts';

const readme = readFileSync(new URL('../../src/queue/README.md', import.meta.url), 'utf8');

describe('src/queue/README.md priorities', () => {
  it('lists every job at its priority', () => {
    const list = readme.split('order the work:')[1]?.split(". A job's fan-out")[0] ?? '';
    const listed: Record<string, number> = {};
    for (const entry of list.split(/,\s*/)) {
      const priority = Number(entry.match(/(\d+)\s*$/)?.[1]);
      for (const [, name] of entry.matchAll(/`([a-z.]+)`/g)) listed[name!] = priority;
    }
    expect(listed).toEqual(
      Object.fromEntries(
        Object.values(jobCatalog).map((definition) => [definition.name, definition.priority]),
      ),
    );
  });

  it("gives the recent tick's fan-out priorities of FANOUT_PRIORITIES", () => {
    expect(readme).toContain(
      `active users' polls\nat ${FANOUT_PRIORITIES.activeRecentPoll} and dormant users' at ${FANOUT_PRIORITIES.dormantRecentPoll}`,
    );
  });
});

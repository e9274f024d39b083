import { describe, expect, it } from 'vitest';
import { estimateCompleteness } from '../../src/audit/completeness-interval.ts';
import type { AuditStatus } from '../../src/metrics/audit-status.ts';
import { escapeHtml, renderReport } from '../../src/report/render-report.ts';
import type { ReportData, StreamReport } from '../../src/report/report-data.ts';
import type { AuditKind, AuditTotals } from '../../src/warehouse/audits.ts';
import type { ReconcilePassRow } from '../../src/warehouse/stream-bookkeeping.ts';

const hostile = `<script>alert("x")</script>'; drop table users; -- $(rm -rf /) & "quoted"`;
const hostileOrg = `org"><img src=x onerror=alert(1)>`;

const totals = (drift: number, missing: number): AuditTotals => ({
  cells: { complete: 196, drift, failed: 1, unsynced: 0 },
  records: { equal: 1200, missing, stale: 2, extra: 1, repaired: missing + 2 },
});

/** An org whose recent stratum is 95 % sure to be under 99.9 % complete, with a finished command run. */
function audit(overrides: Partial<AuditStatus> = {}): AuditStatus {
  return {
    lastRun: {
      id: 42,
      kind: 'command',
      rangeFrom: '2026-10-22',
      rangeTo: '2026-11-20',
      sample: 0.05,
      seed: 'abc',
      population: 3000,
      strata: null,
      planned: 201,
      repair: true,
      startedAt: '2026-11-20T10:00:00.000Z',
      endedAt: '2026-11-20T10:05:00.000Z',
      holder: 'command host pid 1',
      heartbeatAt: '2026-11-20T10:05:00.000Z',
      interrupted: false,
      state: 'done',
      totals: totals(4, 9),
      estimate: estimateCompleteness(196, 200, 3000),
    },
    completeness: {
      sinceDays: 7,
      recent: estimateCompleteness(196, 200, 3000),
      history: estimateCompleteness(300, 300, 36000),
      notYetSynced: { recent: 0, history: 5 },
    },
    last24h: totals(1, 2),
    last7d: totals(4, 9),
    allTime: totals(4, 9),
    driftPerDay: [
      { day: '2026-11-20', cells: 150, unsynced: 0, drift: 3, missing: 7, stale: 2, extra: 1, repaired: 9 },
      { day: '2026-11-19', cells: 51, unsynced: 4, drift: 1, missing: 2, stale: 0, extra: 0, repaired: 2 },
    ],
    ...overrides,
  };
}

function data(overrides: Partial<ReportData> = {}): ReportData {
  return {
    generatedAt: '2026-11-21T00:00:00.000Z',
    totals: { organizations: 1, users: 2, records: 3, deleted: 1, connectionEvents: 4, legacyRecords: 5 },
    perDay: [
      { day: '2026-11-19', type: 'measurement', records: 2 },
      { day: '2026-11-20', type: hostile, records: 1 },
    ],
    perSource: [{ source: hostile, type: 'measurement', records: 3 }],
    freshness: [
      { type: 'measurement', source: hostile, records: 3, newestCreatedAt: '2026-11-20T00:00:00Z' },
    ],
    quarantine: [{ kind: 'record', reason: hostile, items: 2, lastSeenAt: null }],
    audits: [{ orgId: 'org-a', audit: audit() }],
    streams: [stream()],
    ...overrides,
  };
}

/** A finished delivery: a pass of the reconciliation stream, or a replay of gaps it cannot reach. */
function delivery(source: 'stream' | 'replay', id: number, startedAt: string): ReconcilePassRow {
  return {
    id,
    streamName: 'validic-sync-reconcile',
    streamId: 's-1',
    source,
    trigger: 'gap',
    startedAt,
    endedAt: '2026-11-20T12:00:00.000Z',
    outcome: 'caught-up',
    chainFrom: '2026-11-20T08:00:00.000Z',
    reachFrom: '2026-11-19T08:00:00.000Z',
    reachTo: '2026-11-20T10:00:30.000Z',
    coverFrom: '2026-11-19T08:00:00.000Z',
    committedTo: '2026-11-20T10:00:30.000Z',
    readTo: '2026-11-20T10:00:30.000Z',
    nextCoverFrom: '2026-11-20T10:00:30.000Z',
    host: 'vm',
    pid: 7,
    heartbeatAt: '2026-11-20T12:00:00.000Z',
    frames: 120,
    missed: 3,
    counts: { inserted: 2, updated: 1, unchanged: 117, stale: 0, quarantined: 0 },
  };
}

/** An org with one open gap, a week of gaps mostly covered, and passes that found some loss. */
function stream(overrides: Partial<StreamReport> = {}): StreamReport {
  return {
    orgId: hostileOrg,
    streamName: 'validic-sync',
    gaps: {
      open: 1,
      oldest: [
        {
          id: 7,
          streamName: 'validic-sync',
          slot: 0,
          from: '2026-11-20T09:00:00.000Z',
          to: '2026-11-20T09:03:00.000Z',
          reason: 'stale',
          recordedAt: '2026-11-20T09:03:01.000Z',
          handledBy: 'reconcile',
          coveredAt: null,
        },
      ],
      recorded7d: 5,
      covered7d: 4,
    },
    reconciliation: {
      streamName: 'validic-sync-reconcile',
      lastPass: delivery('stream', 3, '2026-11-20T10:00:00.000Z'),
      lastDelivery: delivery('replay', 4, '2026-11-20T11:00:00.000Z'),
      interrupted: 1,
      last24h: { passes: 25, missed: 3, frames: 900 },
      last7d: { passes: 170, missed: 11, frames: 6100 },
    },
    ...overrides,
  };
}

describe('renderReport', () => {
  it('is one self-contained page: no scripts and no external resources', () => {
    const html = renderReport(data());
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//i);
    expect(html).toContain('<svg');
  });

  it('escapes every value that came from the warehouse', () => {
    const html = renderReport(data());
    expect(html).not.toContain('<script>alert');
    expect(html).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;; drop table users; -- $(rm -rf /) &amp; &quot;quoted&quot;',
    );
  });

  it('says so when there is nothing to show', () => {
    const html = renderReport(data({ perDay: [], perSource: [], freshness: [], quarantine: [], audits: [] }));
    expect(html).toContain('No records yet.');
    expect(html).toContain('None.');
    expect(html).toContain('<h2>Completeness audit</h2>');
    expect(html).toContain('No organization yet.');
  });
});

describe('the streams and reconciliation section', () => {
  const section = (html: string) =>
    html.slice(
      html.indexOf('<h2>Streams and reconciliation</h2>'),
      html.indexOf('<h2>Completeness audit</h2>'),
    );

  it('shows the gaps open and covered, the last pass, and what the passes found missing', () => {
    const html = section(renderReport(data()));
    expect(html).toContain('<b>org&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</b>, stream validic-sync');
    expect(html).not.toContain('<img');
    expect(html).toContain('<b>1 open</b> now; in the last 7 days 5 recorded, 4 covered.');
    expect(html).toContain(
      '<tr><td>2026-11-20T09:00:00.000Z</td><td>2026-11-20T09:03:00.000Z</td><td>stale</td><td>reconcile</td><td>2026-11-20T09:03:01.000Z</td></tr>',
    );
    expect(html).toContain(
      'Last pass: caught-up, started 2026-11-20T10:00:00.000Z (gap); re-delivered 120, missed by the stream 3.',
    );
    expect(html).toContain(
      'Last replay of gaps (from 2026-11-19): caught-up, started 2026-11-20T11:00:00.000Z (gap); re-delivered 120, missed by the stream 3.',
    );
    expect(html).toContain('1 delivery is marked running although the process is gone');
    expect(html).toContain('<tr><td>last 24 hours</td><td>25</td><td>900</td><td>3</td></tr>');
    expect(html).toContain('<tr><td>last 7 days</td><td>170</td><td>6100</td><td>11</td></tr>');
  });

  it("says when the provider's replay delivers the gaps instead of a reconciliation stream", () => {
    const off = stream({
      reconciliation: {
        streamName: null,
        lastPass: null,
        lastDelivery: null,
        interrupted: 0,
        last24h: { passes: 0, missed: 0, frames: 0 },
        last7d: { passes: 0, missed: 0, frames: 0 },
      },
    });
    const html = section(renderReport(data({ streams: [off] })));
    expect(html).toContain(
      "Reconciliation stream: off (stream.reconcile is false): the provider's replay delivers the gaps.",
    );
    expect(html).not.toContain('marked running');
    expect(section(renderReport(data({ streams: [] })))).toContain('No organization yet.');
  });
});

describe('the completeness audit section', () => {
  const section = (html: string) => html.slice(html.indexOf('<h2>Completeness audit</h2>'));

  it('shows the estimate per stratum, the last run and the drift per day of each org', () => {
    const html = section(renderReport(data()));
    expect(html).toContain('<p><b>org-a</b></p>');
    expect(html).toContain('cells audited in the last 7 days');
    // recent: 196 of 200 complete, interval 95.06 % to 99.4 %; history: 300 of 300, 98.78 % to 100 %.
    expect(html).toContain(
      '<tr><td>recent (last 30 days)</td><td>98 %</td><td>95.06 % to 99.4 %</td><td>200 (196 complete)</td><td>0</td><td>3000</td></tr>',
    );
    expect(html).toContain(
      '<tr><td>history (older)</td><td>100 %</td><td>98.78 % to 100 %</td><td>300 (300 complete)</td><td>5</td><td>36000</td></tr>',
    );
    // Under 99.9 % for sure: what to run.
    expect(html).toContain('validic-sync audit --from 30d --to today --sample 100% --org org-a');
    expect(html).toContain(
      'Last run 42 (command, 2026-10-22 to 2026-11-20), started 2026-11-20T10:00:00.000Z, ended 2026-11-20T10:05:00.000Z: cells 196 complete, 4 drift, 1 failed of 201 planned; records 1200 equal, 9 missing, 2 stale, 1 extra, 11 repaired.',
    );
    expect(html).toContain(
      'Estimate: 98 % of cells complete (95 % interval 95.06 % to 99.4 %; 200 of 3000 cells audited).',
    );
    expect(html).toContain(
      '<thead><tr><th>day</th><th>cells</th><th>not yet synced</th><th>drift</th><th>missing</th><th>stale</th><th>extra</th><th>repaired</th></tr></thead>',
    );
    expect(html).toContain(
      '<tr><td>2026-11-20</td><td>150</td><td>0</td><td>3</td><td>7</td><td>2</td><td>1</td><td>9</td></tr>',
    );
  });

  it('says what is not there yet, and gives no advice when the audit finds no drift', () => {
    const clean = audit({
      completeness: {
        sinceDays: 3,
        recent: estimateCompleteness(300, 300, 3000),
        history: null,
        notYetSynced: { recent: 0, history: 0 },
      },
      lastRun: { ...audit().lastRun!, kind: 'schedule', endedAt: null, state: 'interrupted', estimate: null },
      driftPerDay: [],
    });
    const html = section(
      renderReport(
        data({
          audits: [
            { orgId: 'org-a', audit: clean },
            { orgId: 'org-b', audit: audit({ lastRun: null, driftPerDay: [] }) },
          ],
        }),
      ),
    );
    expect(html).toContain('cells audited in the last 3 days');
    expect(html).toContain('<tr><td>history (older)</td><td>no synced cell audited yet</td>');
    expect(html).toContain('(schedule, 2026-10-22 to 2026-11-20)');
    expect(html).toContain('interrupted (its process stopped)');
    expect(html).not.toContain('Estimate:');
    expect(html).toContain('No cell audited in the last 7 days.');
    expect(html).toContain('<p><b>org-b</b></p>');
    expect(html).toContain('No audit run yet.');
    // org-b's recent stratum is the drifted one: the advice names it, not org-a.
    expect(html).not.toContain('--org org-a');
    expect(html).toContain('--org org-b');
  });

  it('a first start, before any sync covered the cells drawn: no estimate, no warning, the cells not yet synced', () => {
    const first = audit({
      completeness: { sinceDays: 7, recent: null, history: null, notYetSynced: { recent: 12, history: 0 } },
      lastRun: { ...audit().lastRun!, kind: 'schedule', totals: totals(0, 0), state: 'done', estimate: null },
    });
    const html = section(renderReport(data({ audits: [{ orgId: 'org-a', audit: first }] })));
    expect(html).toContain(
      '<tr><td>recent (last 30 days)</td><td>no synced cell audited yet</td><td></td><td>0</td><td>12</td>',
    );
    expect(html).not.toContain('class="warn"');
    expect(html).not.toContain('--sample 100%');
  });

  it('prints an interval that contains the computed one (the upper bound rounded up)', () => {
    const recent = { ...estimateCompleteness(196, 200, 3000)!, lower: 0.98129, upper: 0.99341 };
    const html = section(
      renderReport(
        data({
          audits: [
            {
              orgId: 'org-a',
              audit: audit({
                completeness: {
                  sinceDays: 7,
                  recent,
                  history: null,
                  notYetSynced: { recent: 0, history: 0 },
                },
              }),
            },
          ],
        }),
      ),
    );
    expect(html).toContain('<td>98.12 % to 99.35 %</td>');
  });

  it('escapes every value, the org id and the run and day fields included', () => {
    const run = audit().lastRun!;
    const html = renderReport(
      data({
        audits: [
          {
            orgId: hostileOrg,
            audit: audit({
              lastRun: {
                ...run,
                kind: hostile as AuditKind,
                rangeFrom: hostile,
                rangeTo: hostile,
                startedAt: hostile,
                endedAt: hostile,
              },
              driftPerDay: [
                {
                  day: hostile,
                  cells: 1,
                  unsynced: 0,
                  drift: 1,
                  missing: 1,
                  stale: 0,
                  extra: 0,
                  repaired: 1,
                },
              ],
            }),
          },
        ],
      }),
    );
    expect(html).not.toContain(hostileOrg);
    expect(html).not.toContain('<script>alert');
    expect(html).not.toMatch(/<[^>]*\son\w+=/i);
    expect(html).toContain(`<p><b>${escapeHtml(hostileOrg)}</b></p>`);
    expect(html).toContain(`--org ${escapeHtml(hostileOrg)}`);
    expect(html).toContain(`(${escapeHtml(hostile)}, ${escapeHtml(hostile)} to ${escapeHtml(hostile)})`);
    expect(html).toContain(`<tr><td>${escapeHtml(hostile)}</td><td>1</td>`);
    // The only markup is the report's own.
    const tags = new Set([...html.matchAll(/<\/?([a-z0-9!]+)/gi)].map((m) => m[1]!.toLowerCase()));
    expect([...tags].filter((t) => !OWN_TAGS.has(t))).toEqual([]);
  });
});

const OWN_TAGS = new Set([
  '!doctype',
  'html',
  'head',
  'meta',
  'title',
  'style',
  'body',
  'h1',
  'h2',
  'p',
  'div',
  'b',
  'svg',
  'text',
  'rect',
  'span',
  'i',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
]);

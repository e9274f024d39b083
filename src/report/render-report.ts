/**
 * The HTML report: the data escaped once, rendered into one self-contained page.
 */
import { type CompletenessEstimate, formatShare } from '../audit/completeness-interval.ts';
import type { AuditStatus } from '../metrics/audit-status.ts';
import type { ReportData, StreamReport } from './report-data.ts';

/** Escapes text for HTML element content and attribute values (uids, sources and reasons are untrusted). */
export function escapeHtml(value: unknown): string {
  return String(value ?? '')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** `e(…)`: the many escapes of the page below. */
const e = escapeHtml;

/**
 * The HTML report: one self-contained page (inline CSS and SVG, no scripts, no external resources) that
 * opens offline. Pure: data in, HTML out. Every value from the warehouse is escaped, since uids, source
 * names and quarantine reasons come from outside.
 */
const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#e15759',
  '#76b7b2',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];

function stackedBars(perDay: ReportData['perDay']): string {
  const days = [...new Set(perDay.map((r) => r.day))].sort();
  const types = [...new Set(perDay.map((r) => r.type))].sort();
  if (days.length === 0) return '<p>No records yet.</p>';
  const totals = days.map((day) => perDay.filter((r) => r.day === day).reduce((s, r) => s + r.records, 0));
  const max = Math.max(...totals, 1);
  const width = 900;
  const height = 260;
  const left = 50;
  const bottom = 30;
  const barWidth = (width - left) / days.length;
  const scale = (height - bottom - 10) / max;
  const bars: string[] = [];
  days.forEach((day, i) => {
    let y = height - bottom;
    for (const [t, type] of types.entries()) {
      const count = perDay.find((r) => r.day === day && r.type === type)?.records ?? 0;
      if (count === 0) continue;
      const h = count * scale;
      y -= h;
      bars.push(
        `<rect x="${(left + i * barWidth + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(barWidth - 2, 1).toFixed(1)}" height="${h.toFixed(1)}" fill="${PALETTE[t % PALETTE.length]}"><title>${e(day)} ${e(type)}: ${count}</title></rect>`,
      );
    }
  });
  const labels = days
    .map((day, i) =>
      i % Math.ceil(days.length / 10) === 0
        ? `<text x="${(left + i * barWidth).toFixed(1)}" y="${height - 10}" font-size="11">${e(day.slice(5))}</text>`
        : '',
    )
    .join('');
  const axis = `<text x="0" y="15" font-size="11">${max}</text><text x="0" y="${height - bottom}" font-size="11">0</text>`;
  const legend = types
    .map(
      (type, t) =>
        `<span class="key"><i style="background:${PALETTE[t % PALETTE.length]}"></i>${e(type)}</span>`,
    )
    .join(' ');
  return `<svg viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Records per day by type">${axis}${bars.join('')}${labels}</svg><div>${legend}</div>`;
}

function table(headers: string[], rows: unknown[][]): string {
  if (rows.length === 0) return '<p>None.</p>';
  const head = headers.map((h) => `<th>${e(h)}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${e(c)}</td>`).join('')}</tr>`).join('');
  return `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

/** The recent stratum's upper bound under which the ValidicSyncAuditDrift alert fires (alerts.yml). */
const AUDIT_ALERT_BELOW = 0.999;

function estimateRow(label: string, c: CompletenessEstimate | null, notYetSynced: number): unknown[] {
  return c
    ? [
        label,
        formatShare(c.estimate),
        `${formatShare(c.lower)} to ${formatShare(c.upper, 'up')}`,
        `${c.sampled} (${c.complete} complete)`,
        notYetSynced,
        c.population,
      ]
    : [label, 'no synced cell audited yet', '', 0, notYetSynced, ''];
}

function auditSection(orgId: string, audit: AuditStatus): string {
  const c = audit.completeness;
  const out = [
    `<div class="audit"><p><b>${e(orgId)}</b></p>`,
    `<p>Scheduled audit, cells audited in the last ${e(c.sinceDays)} days (share of cells complete, 95 % interval):</p>`,
    table(
      [
        'stratum',
        'complete',
        '95 % interval',
        'cells audited',
        'drawn, not yet synced',
        'synced cells in population',
      ],
      [
        estimateRow('recent (last 30 days)', c.recent, c.notYetSynced.recent),
        estimateRow('history (older)', c.history, c.notYetSynced.history),
      ],
    ),
  ];
  if (c.recent && c.recent.upper < AUDIT_ALERT_BELOW)
    out.push(
      `<p class="warn">The recent stratum is 95 % sure to be under ${e(formatShare(AUDIT_ALERT_BELOW))} complete. To find and repair the cells: <b>validic-sync audit --from 30d --to today --sample 100% --org ${e(orgId)}</b>.</p>`,
    );
  const run = audit.lastRun;
  if (run) {
    const { cells, records } = run.totals;
    const estimate = run.estimate
      ? ` Estimate: ${formatShare(run.estimate.estimate)} of cells complete (95 % interval ${formatShare(run.estimate.lower)} to ${formatShare(run.estimate.upper, 'up')}; ${run.estimate.sampled} of ${run.estimate.population} cells audited).`
      : '';
    out.push(
      `<p>Last run ${e(run.id)} (${e(run.kind)}, ${e(run.rangeFrom)} to ${e(run.rangeTo)}), started ${e(run.startedAt)}, ${run.state === 'done' ? `ended ${e(run.endedAt)}` : run.state === 'interrupted' ? `interrupted${run.endedAt ? ` at ${e(run.endedAt)}` : ' (its process stopped)'}` : 'running'}: cells ${e(cells.complete)} complete, ${e(cells.drift)} drift, ${e(cells.failed)} failed${cells.unsynced ? `, ${e(cells.unsynced)} not yet synced` : ''} of ${e(run.planned)} planned; records ${e(records.equal)} equal, ${e(records.missing)} missing, ${e(records.stale)} stale, ${e(records.extra)} extra, ${e(records.repaired)} repaired.${e(estimate)}</p>`,
    );
  } else out.push('<p>No audit run yet.</p>');
  out.push(
    '<p>Drift found per day (UTC day audited, last 7 days, newest first):</p>',
    audit.driftPerDay.length === 0
      ? '<p>No cell audited in the last 7 days.</p>'
      : table(
          ['day', 'cells', 'not yet synced', 'drift', 'missing', 'stale', 'extra', 'repaired'],
          audit.driftPerDay.map((d) => [
            d.day,
            d.cells,
            d.unsynced,
            d.drift,
            d.missing,
            d.stale,
            d.extra,
            d.repaired,
          ]),
        ),
    '</div>',
  );
  return out.join('\n');
}

function streamSection(stream: StreamReport): string {
  const { gaps, reconciliation: r } = stream;
  const describe = (d: NonNullable<typeof r.lastPass>) =>
    `${e(d.outcome)}, started ${e(d.startedAt)} (${e(d.trigger)}); re-delivered ${e(d.frames)}, missed by the stream ${e(d.missed)}.`;
  const out = [
    `<div class="audit"><p><b>${e(stream.orgId)}</b>${stream.streamName ? `, stream ${e(stream.streamName)}` : ''}</p>`,
    `<p>Gaps (spans in which the stream may have lost events, until a delivery covers them): <b>${e(gaps.open)} open</b> now; in the last 7 days ${e(gaps.recorded7d)} recorded, ${e(gaps.covered7d)} covered.</p>`,
  ];
  if (gaps.open > 0)
    out.push(
      table(
        ['from', 'to', 'reason', 'left to', 'recorded'],
        gaps.oldest.map((g) => [g.from, g.to, g.reason, g.handledBy, g.recordedAt]),
      ),
    );
  out.push(
    r.streamName
      ? `<p>Reconciliation stream ${e(r.streamName)} (one of the platform's 5 streams per customer). ${r.lastPass ? `Last pass: ${describe(r.lastPass)}` : 'No pass yet.'}</p>`
      : "<p>Reconciliation stream: off (stream.reconcile is false): the provider's replay delivers the gaps.</p>",
  );
  const d = r.lastDelivery;
  if (d && d.source === 'replay')
    out.push(`<p>Last replay of gaps (from ${e(d.reachFrom.slice(0, 10))}): ${describe(d)}</p>`);
  if (r.interrupted > 0)
    out.push(
      `<p class="warn">${e(r.interrupted)} ${r.interrupted === 1 ? 'delivery is' : 'deliveries are'} marked running although the process is gone: the next stream, reconcile or worker start marks ${r.interrupted === 1 ? 'it' : 'them'} interrupted and replays the gap.</p>`,
    );
  out.push(
    '<p>What the deliveries re-delivered, and what of it the stream had missed (its measured loss):</p>',
    table(
      ['period', 'deliveries', 're-delivered', 'missed by the stream'],
      [
        ['last 24 hours', r.last24h.passes, r.last24h.frames, r.last24h.missed],
        ['last 7 days', r.last7d.passes, r.last7d.frames, r.last7d.missed],
      ],
    ),
    '</div>',
  );
  return out.join('\n');
}

function streamSections(streams: readonly StreamReport[]): string {
  if (streams.length === 0) return '<p>No organization yet.</p>';
  return streams.map(streamSection).join('\n');
}

function auditSections(audits: ReportData['audits']): string {
  if (audits.length === 0) return '<p>No organization yet.</p>';
  return audits.map((a) => auditSection(a.orgId, a.audit)).join('\n');
}

export function renderReport(data: ReportData): string {
  const t = data.totals;
  const quarantined = data.quarantine.reduce((s, q) => s + q.items, 0);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>validic-sync report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:1000px}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #ddd;border-radius:6px;padding:.6rem 1rem}
.card b{display:block;font-size:1.3rem}
table{border-collapse:collapse;font-size:.9rem}td,th{border-bottom:1px solid #eee;padding:.25rem .6rem;text-align:left}
.audit{margin-bottom:1.5rem}.warn{color:#b00020}
.key{margin-right:1rem;font-size:.85rem}.key i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
</style></head><body>
<h1>validic-sync warehouse report</h1>
<p>Generated ${e(data.generatedAt)}.</p>
<div class="cards">
<div class="card"><b>${t.users}</b>users</div>
<div class="card"><b>${t.records}</b>records (${t.deleted} deleted)</div>
<div class="card"><b>${t.connectionEvents}</b>connection events</div>
<div class="card"><b>${t.legacyRecords}</b>legacy records</div>
<div class="card"><b>${quarantined}</b>quarantined items</div>
</div>
<h2>Records per day by type</h2>
${stackedBars(data.perDay)}
<h2>Records by source and type</h2>
${table(
  ['source', 'type', 'records'],
  data.perSource.map((r) => [r.source, r.type, r.records]),
)}
<h2>Freshness</h2>
<p>Newest platform processing time per type and source; the oldest first.</p>
${table(
  ['type', 'source', 'records', 'newest created_at'],
  data.freshness.map((r) => [r.type, r.source, r.records, r.newestCreatedAt ?? '']),
)}
<h2>Quarantine</h2>
${table(
  ['kind', 'reason', 'items', 'last seen'],
  data.quarantine.map((q) => [q.kind, q.reason, q.items, q.lastSeenAt ?? '']),
)}
<h2>Streams and reconciliation</h2>
${streamSections(data.streams)}
<h2>Completeness audit</h2>
<p>The warehouse compared with the platform cell by cell (user × resource × ≤ 30-day window): a cell is complete when every record matches by id, checksum and deletion.</p>
${auditSections(data.audits)}
</body></html>
`;
}

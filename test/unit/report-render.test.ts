import { describe, expect, it } from 'vitest';
import { renderReport } from '../../src/report/render-report.ts';
import type { ReportData } from '../../src/report/report-data.ts';

const hostile = `<script>alert("x")</script>'; drop table users; -- $(rm -rf /) & "quoted"`;

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
    const html = renderReport(data({ perDay: [], perSource: [], freshness: [], quarantine: [] }));
    expect(html).toContain('No records yet.');
    expect(html).toContain('None.');
  });
});

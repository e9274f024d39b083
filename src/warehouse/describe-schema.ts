/**
 * The tables and views of a schema with their COMMENT ON texts, columns and primary keys, read from the
 * catalog: the one source of docs/warehouse.md and docs/dbt/sources.yml.
 */
import { type Kysely, sql } from 'kysely';

export interface RelationInfo {
  name: string;
  kind: 'table' | 'view';
  comment: string | null;
  key: string | null;
  columns: { name: string; type: string; comment: string | null }[];
}

export async function describeSchema(db: Kysely<any>, schema = 'validic'): Promise<RelationInfo[]> {
  const relations = await sql<{ name: string; kind: string; comment: string | null; key: string | null }>`
    select c.relname as name, case c.relkind when 'v' then 'view' else 'table' end as kind,
      obj_description(c.oid, 'pg_class') as comment,
      (select string_agg(a.attname, ', ' order by k.ord)
         from pg_constraint pk
         cross join lateral unnest(pk.conkey) with ordinality as k(attnum, ord)
         join pg_attribute a on a.attrelid = pk.conrelid and a.attnum = k.attnum
        where pk.conrelid = c.oid and pk.contype = 'p') as key
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind in ('r', 'v', 'p')
    order by case c.relkind when 'v' then 1 else 0 end, c.relname`.execute(db);
  const columns = await sql<{ relation: string; name: string; type: string; comment: string | null }>`
    select c.relname as relation, a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
      col_description(c.oid, a.attnum) as comment
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    where n.nspname = ${schema} and c.relkind in ('r', 'v', 'p')
    order by c.relname, a.attnum`.execute(db);
  return relations.rows.map((r) => ({
    name: r.name,
    kind: r.kind as RelationInfo['kind'],
    comment: r.comment,
    key: r.key,
    columns: columns.rows
      .filter((c) => c.relation === r.name)
      .map(({ name, type, comment }) => ({ name, type, comment })),
  }));
}

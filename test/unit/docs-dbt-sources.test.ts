/** docs/dbt/sources.yml: what an analyst's dbt project reads (descriptions, key tests, freshness). */
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderDbtSources } from '../../src/docs/render-dbt-sources.ts';
import type { RelationInfo } from '../../src/warehouse/describe-schema.ts';

const column = (name: string, comment: string | null = `${name} text`) => ({ name, type: 'text', comment });
const relations: RelationInfo[] = [
  {
    name: 'records',
    kind: 'table',
    comment: 'One row per record.',
    key: 'org_id, id',
    columns: [column('org_id'), column('id'), column('ingested_at')],
  },
  { name: 'runs', kind: 'table', comment: null, key: 'id', columns: [column('id', null), column('note')] },
  {
    name: 'users_view',
    kind: 'view',
    comment: 'A view.',
    key: null,
    columns: [column('uid'), column('ingested_at')],
  },
];

describe('renderDbtSources', () => {
  const source = parse(renderDbtSources(relations)).sources[0];
  const table = (name: string) => source.tables.find((t: { name: string }) => t.name === name);

  it('names the schema and keeps every relation, column and description', () => {
    expect(source).toMatchObject({ name: 'validic', schema: 'validic' });
    expect(source.tables.map((t: { name: string }) => t.name)).toEqual(['records', 'runs', 'users_view']);
    expect(table('records').description).toBe('One row per record.');
    expect(table('records').columns[1]).toMatchObject({
      name: 'id',
      description: 'id text',
      data_type: 'text',
    });
    expect(table('runs').description).toBe('');
  });

  it('tests keys: built-in unique for one column, dbt_utils for a composite key, not_null on each', () => {
    expect(table('runs').columns[0].data_tests).toEqual(['unique', 'not_null']);
    expect(table('runs').columns[1].data_tests).toBeUndefined();
    expect(table('records').data_tests).toEqual([
      { 'dbt_utils.unique_combination_of_columns': { combination_of_columns: ['org_id', 'id'] } },
    ]);
    expect(table('records').columns[0].data_tests).toEqual(['not_null']);
    expect(table('users_view').data_tests).toBeUndefined();
  });

  it('declares ingested_at where it exists, and freshness for records only', () => {
    expect(table('records')).toMatchObject({
      loaded_at_field: 'ingested_at',
      freshness: { warn_after: { count: 6, period: 'hour' }, error_after: { count: 24, period: 'hour' } },
    });
    expect(table('users_view').loaded_at_field).toBe('ingested_at');
    expect(table('users_view').freshness).toBeUndefined();
    expect(table('runs').loaded_at_field).toBeUndefined();
  });
});

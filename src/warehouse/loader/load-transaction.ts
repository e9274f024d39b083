/**
 * The loader's transaction: BEGIN, its advisory locks and the records' keys-only probe in ONE round
 * trip (a small batch is bound by round trips, not by bytes), on the general `Warehouse.transaction`
 * with its `begin` statements. The other saving, the progress riding in the new-records statement
 * (`also`), is in apply-batch.ts and insert-new-records.ts.
 */
import type { Warehouse, WarehouseTransaction } from '../open-warehouse.ts';
import { MONTH_PARTITIONS_LOCK } from './month-partitions.ts';

/**
 * Transaction-level advisory locks on `hashtextextended(key, 0)`: the shared ones first, then the
 * exclusive ones in hash order, so two transactions taking overlapping sets always take them in the
 * same order and cannot deadlock on them. Before all of them, when `monthPartitions` is set, the month
 * creation's lock, shared (month-partitions.ts, MONTH_PARTITIONS_LOCK): first, so a load waiting for a
 * creation holds no key lock another load could be waiting for.
 */
export interface LoadLocks {
  shared?: readonly string[];
  exclusive?: readonly string[];
  /** The transaction writes validic.records / record_versions: share the month creation's lock. */
  monthPartitions?: boolean;
}

/**
 * A SQL string literal for the statements sent with BEGIN, correct whatever
 * standard_conforming_strings says (the same rule as pg's escapeLiteral: quotes doubled; with a
 * backslash, an E'' literal with it doubled).
 */
export function sqlLiteral(text: string): string {
  const quoted = text.replaceAll("'", "''");
  return text.includes('\\') ? `E'${quoted.replaceAll('\\', '\\\\')}'` : `'${quoted}'`;
}

/** The statements that take `locks` (simple query protocol: literals, no parameters). */
function advisoryLockSql(locks: LoadLocks): string[] {
  const lockAll = (lockFunction: string, keys: readonly string[] = []) =>
    keys.length === 0
      ? []
      : [
          `select ${lockFunction}(k) from (select distinct hashtextextended(x, 0) as k from unnest(array[${[...new Set(keys)].map(sqlLiteral).join(',')}]::text[]) as x order by 1) as s`,
        ];
  return [
    ...(locks.monthPartitions ? [`select pg_advisory_xact_lock_shared(${MONTH_PARTITIONS_LOCK})`] : []),
    ...lockAll('pg_advisory_xact_lock_shared', locks.shared),
    ...lockAll('pg_advisory_xact_lock', locks.exclusive),
  ];
}

/**
 * Runs `fn` in one transaction that first takes `locks`, then runs `probe` (one statement with
 * literals only; it sees everything committed before the locks were granted), all in BEGIN's round
 * trip. `fn` gets the probe's rows (undefined without a probe).
 */
export async function loadTransaction<T>(
  warehouse: Warehouse,
  { locks, probe }: { locks: LoadLocks; probe?: string | null },
  fn: (tx: WarehouseTransaction, probed: Record<string, unknown>[] | undefined) => Promise<T>,
): Promise<T> {
  const statements = [...advisoryLockSql(locks), ...(probe ? [probe] : [])];
  return await warehouse.transaction(
    (tx) => fn(tx, probe ? (tx.beginRows ?? []) : undefined),
    statements.length > 0 ? { begin: statements.join('; ') } : {},
  );
}

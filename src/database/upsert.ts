import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import { OperatorError } from '../common/operator-error.js';

/**
 * Inserts `rows`, or updates those whose `conflictPaths` exist, as TypeORM's `upsert` does,
 * but leaves the rows as given. `upsert` copies what the database returns back into the
 * entities by position, and the database does not return an upsert's rows in the order
 * given: re-imported visits not in id order came back with each other's ids, so the documents
 * made from them afterwards were written under the wrong visits.
 */
export async function upsertRows<T extends ObjectLiteral>(
  tx: EntityManager,
  target: EntityTarget<T>,
  rows: T[],
  conflictPaths: string[],
  options: { sameOwner?: string; statementRows?: number } = {},
): Promise<void> {
  if (rows.length === 0) return;
  const metadata = tx.connection.getMetadata(target);
  const conflict = metadata.mapPropertyPathsToColumns(conflictPaths);
  const overwrite = metadata.columns.filter(
    (column) =>
      !conflict.includes(column) && column.isUpdate !== false && !column.generatedType && rows.some((row) => column.getEntityValue(row) !== undefined),
  );
  // Rows are written `statementRows` to a statement (every row by default), all before a refusal
  // is said, so that it counts the rows of the whole call.
  const step = options.statementRows ?? rows.length;
  let refused = 0;
  for (let at = 0; at < rows.length; at += step) {
    const part = rows.slice(at, at + step);
    const insert = tx
      .createQueryBuilder()
      .insert()
      .into(target)
      .values(part)
      .orUpdate(
        [...conflict, ...overwrite].map((column) => column.databaseName),
        conflict.map((column) => column.databaseName),
        { skipUpdateIfNoValuesChanged: false },
      )
      .updateEntity(false);
    if (options.sameOwner === undefined) {
      await insert.execute();
      continue;
    }
    // A row of another owner is left as it is, even one that another writer inserted after this
    // writer looked (PostgreSQL's ON CONFLICT waits for that writer's commit): the rows written
    // are counted, and the transaction fails when one was not.
    const [owner] = metadata.mapPropertyPathsToColumns([options.sameOwner]);
    const [sql, parameters] = insert.getQueryAndParameters();
    const quote = (name: string) => tx.connection.driver.escape(name);
    const guarded = `${sql} WHERE ${quote(metadata.tableName)}.${quote(owner.databaseName)} = EXCLUDED.${quote(owner.databaseName)} RETURNING 1 AS written`;
    refused += part.length - (await tx.query<unknown[]>(guarded, parameters)).length;
  }
  if (refused > 0) {
    throw new OperatorError(
      `${refused} of the ${metadata.tableName} being written belong to another ${options.sameOwner!.replace(/Id$/, '')} now (written by another import meanwhile): nothing of this batch was written.`,
    );
  }
}

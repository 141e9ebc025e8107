import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';

/**
 * Inserts `rows`, or updates those whose `conflictPaths` exist, as TypeORM's `upsert` does,
 * but leaves the rows as given. `upsert` copies what the database returns back into the
 * entities by position, and the database does not return an upsert's rows in the order
 * given: re-imported visits not in id order came back with each other's ids, so the documents
 * made from them afterwards were written under the wrong visits.
 */
export async function upsertRows<T extends ObjectLiteral>(tx: EntityManager, target: EntityTarget<T>, rows: T[], conflictPaths: string[]): Promise<void> {
  if (rows.length === 0) return;
  const metadata = tx.connection.getMetadata(target);
  const conflict = metadata.mapPropertyPathsToColumns(conflictPaths);
  const overwrite = metadata.columns.filter(
    (column) =>
      !conflict.includes(column) && column.isUpdate !== false && !column.generatedType && rows.some((row) => column.getEntityValue(row) !== undefined),
  );
  await tx
    .createQueryBuilder()
    .insert()
    .into(target)
    .values(rows)
    .orUpdate(
      [...conflict, ...overwrite].map((column) => column.databaseName),
      conflict.map((column) => column.databaseName),
      { skipUpdateIfNoValuesChanged: false },
    )
    .updateEntity(false)
    .execute();
}

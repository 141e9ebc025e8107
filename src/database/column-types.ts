import type { ColumnOptions } from 'typeorm';
import { databaseKindFromEnvironment } from '../config/app-config.js';

/**
 * Column definitions that differ between the two supported databases. The driver is
 * fixed for the life of a process (DATABASE_URL is read once), so the entity metadata
 * is decided when the entity modules load.
 */
const postgres = databaseKindFromEnvironment() === 'postgres';

export const binaryColumn: ColumnOptions = { type: postgres ? 'bytea' : 'blob' };
export const timestampColumn: ColumnOptions = { type: postgres ? 'timestamptz' : 'datetime' };

/** Integer ids that may exceed 2^31 (visit ids): bigint columns, read back as numbers. */
export const bigIntTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};

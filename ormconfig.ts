import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/app-config.js';
import { dataSourceOptions } from './src/database/data-source-options.js';

/**
 * The TypeORM DataSource for tools (migrations), built from the same validated
 * environment as the service: DATABASE_URL set means PostgreSQL, unset the embedded SQLite.
 */
export default new DataSource(dataSourceOptions(loadConfig()));

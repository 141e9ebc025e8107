import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { SQLITE_CACHE_KIB } from './data-source-options.js';
import { SqliteReaders } from './sqlite-readers.js';

/**
 * The process's SQLite reader threads (see SqliteReaders), when it runs on a SQLite file and
 * SQLITE_READ_THREADS is above 0; stopped with the module, before the connection closes.
 */
@Injectable()
export class SqliteReadThreads implements OnModuleDestroy {
  readonly readers: SqliteReaders | null;

  constructor(@InjectDataSource() db: DataSource, config: AppConfig) {
    const options = db.options;
    this.readers =
      options.type === 'better-sqlite3' && options.database !== ':memory:' && config.SQLITE_READ_THREADS > 0
        ? new SqliteReaders(options.database, config.SQLITE_READ_THREADS, {
            nativeBinding: options.nativeBinding,
            timeoutMs: options.timeout ?? 5000,
            cacheKiB: SQLITE_CACHE_KIB,
          })
        : null;
  }

  onModuleDestroy(): Promise<void> | undefined {
    return this.readers?.close();
  }
}

import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';
import { runMigrationsExclusively } from './migration-tools.js';
import { guardPoolClients } from './pool-errors.js';

/** The TypeORM connection for the configured database; migrations run at start when enabled. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        ...dataSourceOptions(config),
        migrationsRun: config.MIGRATIONS_RUN,
        migrationsTransactionMode: 'each' as const,
        retryAttempts: 0,
        // No "Retrying (1)..." line with a stack: the start fails in one line (main.ts).
        toRetry: () => false,
      }),
      dataSourceFactory: async (options?: DataSourceOptions) => {
        // Migrations are run here, one process at a time, rather than by TypeORM at initialize.
        const db = await new DataSource({ ...options!, migrationsRun: false }).initialize();
        guardPoolClients(db);
        if (options!.migrationsRun) await runMigrationsExclusively(db);
        return db;
      },
    }),
  ],
})
export class DatabaseModule {}

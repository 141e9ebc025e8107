import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';
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
      }),
      dataSourceFactory: async (options?: DataSourceOptions) => {
        const db = await new DataSource(options!).initialize();
        guardPoolClients(db);
        return db;
      },
    }),
  ],
})
export class DatabaseModule {}

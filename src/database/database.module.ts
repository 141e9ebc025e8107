import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';

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
    }),
  ],
})
export class DatabaseModule {}

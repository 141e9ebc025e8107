import { Global, Module, type DynamicModule } from '@nestjs/common';
import { AppConfig, loadConfig } from './app-config.js';

/**
 * Provides the validated {@link AppConfig}. The configuration is read once, at boot;
 * tests pass their own object through {@link ConfigModule.forRoot}.
 */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig = loadConfig()): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: AppConfig, useValue: config }],
      exports: [AppConfig],
    };
  }
}

import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { AppConfig, ConfigError, loadConfig } from './config/app-config.js';
import { DemoService } from './demo/demo.service.js';
import { setupApp } from './setup-app.js';

async function bootstrap(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const app = await NestFactory.create(AppModule.forRoot(config), { bufferLogs: true });
  setupApp(app);
  if (config.SEED_DEMO) await app.get(DemoService).seedIfEmpty();
  await app.listen(config.PORT, config.HOST);
  // On SIGTERM (a rolling update) or SIGINT: stop accepting, finish, close the database, exit 0.
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      if (stopping) return;
      stopping = true;
      app.close().then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`shutdown failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
    });
  }
  await app.get(DemoService).announce(await app.getUrl());
}

bootstrap().catch((error: unknown) => {
  process.stderr.write(`results-service failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});

import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { App } from 'supertest/types.js';
import { AppModule } from '../../src/app.module.js';
import type { AppConfig } from '../../src/config/app-config.js';
import { prepareSchema } from '../../src/database/migration-tools.js';
import { setupApp } from '../../src/setup-app.js';
import { contractRecorder } from './contract.js';
import { freePort } from './listen.js';
import { isolatedConfig } from './test-config.js';

export interface TestApp {
  app: NestExpressApplication;
  http: App;
  config: AppConfig;
  /** The environment of this app, for running the CLI against the same database. */
  env: Record<string, string>;
  close: () => Promise<void>;
}

/** The real application (same module, same global setup) on the test file's own database. */
export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const { config, env: fullEnv, drop } = isolatedConfig(env);
  await prepareSchema(config);
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config)] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bufferLogs: true });
  // Every response of every HTTP test is checked against the committed contract.
  const violations: string[] = [];
  app.use(contractRecorder(violations));
  setupApp(app);
  await app.init();
  return {
    app,
    http: app.getHttpServer() as App,
    config,
    env: fullEnv,
    close: async () => {
      await app.close();
      await drop();
      if (violations.length > 0) {
        throw new Error(`responses that do not match openapi/openapi.json:\n${[...new Set(violations)].join('\n')}`);
      }
    },
  };
}

/**
 * A test app listening on a free loopback port, whose PUBLIC_BASE_URL is that address: for
 * clients that are given a URL (generated clients, OAuth libraries, the README's scripts).
 */
export async function startListeningTestApp(env: Record<string, string> = {}): Promise<{ t: TestApp; base: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ PUBLIC_BASE_URL: base, ...env });
  await t.app.listen(port, '127.0.0.1');
  return { t, base };
}

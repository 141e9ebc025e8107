import 'reflect-metadata';
import type { Server } from 'node:http';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module.js';
import { KeyringService } from './auth/keyring.service.js';
import { VerifiedTokens } from './auth/verified-tokens.js';
import { BodyPool } from './common/body-pool.js';
import { letGoOfCompressionBuffers } from './common/compression.js';
import { environmentFailure } from './common/environment-failure.js';
import { establishSettingChecks, SettingChecksUnreadableError, storeSettingChecksLater } from './database/setting-checks.js';
import { drainConnections, openConnections } from './common/idle-connections.js';
import { startIdleCollector } from './common/idle-collector.js';
import { listen } from './common/listen.js';
import { AppConfig, BUILT_IN_API_KEY_HASH_KEY, ConfigError, loadConfig } from './config/app-config.js';
import { prepareDataDir } from './database/data-source-options.js';
import { prepareSchema, SchemaMissingError } from './database/migration-tools.js';
import { DemoService } from './demo/demo.service.js';
import { LifecycleService } from './health/lifecycle.service.js';
import { allRequestsLogged } from './logging/request-logging.js';
import { prepareImageFolder } from './menus/image-storage.js';
import { startMetricsServer } from './metrics/metrics-server.js';
import { MetricsService } from './metrics/metrics.service.js';
import { setupApp } from './setup-app.js';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.js';

async function bootstrap(): Promise<void> {
  let config: AppConfig;
  try {
    config = loadConfig();
    // The folders the settings name, before the application opens or writes anything in them.
    prepareDataDir(config);
    prepareImageFolder(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  // Before the application: its connections name the schema, and migrations run in it.
  await prepareSchema(config);
  // A failure while the application starts (a database that stops answering after the
  // migrations) comes to the handler below, not to Nest's, which prints its stack and exits 1;
  // what was logged until then stays buffered, so that such a start ends in the one line.
  const app = await NestFactory.create(AppModule.forRoot(config), { bufferLogs: true, autoFlushLogs: false, abortOnError: false });
  setupApp(app);
  if (config.SEED_DEMO) await app.get(DemoService).seedIfEmpty();
  // Not app.listen(): it logs a port it cannot have as an error line of its own, before the
  // start's one line (below) says so.
  await app.init();
  // A database ring none of whose keys this API_KEY_HASH_KEY opens: exit 78, as a wrong setting.
  app.get(KeyringService).assertCanSign();
  // The check value of API_KEY_HASH_KEY, stored when the database has none; another stored is exit 78 (see setting-checks.ts).
  const settingChecks = await establishSettingChecks(app.get(DataSource), config);
  // Tracked from before the server listens: a connection accepted while the start still awaits
  // (the metrics server's host name looked up) was missed, and the shutdown waited out the
  // whole grace period for it.
  const connections = openConnections(app.getHttpServer() as Server);
  const url = await listen(app.getHttpServer() as Server, config.PORT, config.HOST);
  if (config.API_KEY_HASH_KEY === BUILT_IN_API_KEY_HASH_KEY) {
    new Logger('Config').warn(
      'API_KEY_HASH_KEY is the built-in value, which is public: page tokens can be opened and forged, and page ETags reproduced, with it. Set a long random value (and keep it) outside a demo.',
    );
  }
  const metrics = config.METRICS_PORT > 0 ? await startMetricsServer(app.get(MetricsService), config.METRICS_PORT, config.HOST) : null;
  // Dead page bodies, those kept for re-use and the compression workers' buffers are given
  // back when the process goes quiet (see IdleCollector).
  const idleCollections = app.get(MetricsService).idleCollections;
  const pageBodies = app.get(BodyPool);
  const verifiedTokens = app.get(VerifiedTokens);
  const idleCollector =
    config.IDLE_GC_SECONDS > 0
      ? startIdleCollector(config.IDLE_GC_SECONDS, {
          collected: () => idleCollections.inc(),
          // Verified tokens past their time are dropped too (heap, not buffers: nothing to count).
          letGo: () => (verifiedTokens.purgeStale(), pageBodies.letGo() + letGoOfCompressionBuffers()),
        })
      : null;
  const logger = new Logger('Shutdown');
  // No table for the checks yet (started before the migrations Job): stored once it is there;
  // a check another replica stored meanwhile under another API_KEY_HASH_KEY stops this one as
  // a start would (exit 78), after the usual drain.
  const differs = (error: Error): void => {
    new Logger('SettingChecks').error(error.message);
    stop('a differing API_KEY_HASH_KEY', 78).catch(() => process.exit(78));
  };
  const stopStoringChecks = settingChecks === 'no-table' ? storeSettingChecksLater(app.get(DataSource), config, differs) : () => undefined;

  // SIGTERM (a rolling update) or SIGINT: fail readiness, stop accepting connections, let
  // in-flight requests finish for up to SHUTDOWN_GRACE_SECONDS, close the database and
  // Redis, exit 0.
  let stopping = false;
  const stop = async (signal: string, exitCode = 0): Promise<void> => {
    if (stopping) return;
    stopping = true;
    stopStoringChecks();
    const started = performance.now();
    const graceEnds = started + config.SHUTDOWN_GRACE_SECONDS * 1000;
    app.get(LifecycleService).shuttingDown = true;
    const server = app.getHttpServer() as Server;
    const drained = drainConnections(server, connections, SHUTDOWN_LINGER_MS);
    // Said once the listener is closed: whoever reads it finds new connections refused.
    logger.log(`${signal}: draining for up to ${config.SHUTDOWN_GRACE_SECONDS} s`);
    const deadline = setTimeout(() => {
      logger.warn('grace period over: closing the remaining connections');
      server.closeAllConnections();
    }, config.SHUTDOWN_GRACE_SECONDS * 1000);
    await drained;
    clearTimeout(deadline);
    // The requests whose connections the deadline closed end a moment later: their lines are written before the exit.
    await allRequestsLogged(1000);
    idleCollector?.stop();
    metrics?.close();
    // Closing the application waits for what its modules still do (the webhook poller's query, the
    // database pool): a database that stopped answering held it for DATABASE_QUERY_TIMEOUT_MS,
    // past the grace period and into the orchestrator's kill. It has until the grace period ends,
    // and at least CLOSE_MIN_MS; with a webhook delivery in flight, until its request times out
    // and CLOSE_MIN_MS more, to record its outcome (cut off, the event was sent again by the next
    // start though its receiver had taken it).
    const deliveriesEnd = app.get(WebhookDispatcher).deliveriesEndBy();
    const closeBy = Math.max(graceEnds, performance.now() + CLOSE_MIN_MS, (deliveriesEnd ?? 0) + CLOSE_MIN_MS);
    let closeTimer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      app.close().then(() => true),
      new Promise<false>((resolve) => (closeTimer = setTimeout(() => resolve(false), closeBy - performance.now()))),
    ]);
    clearTimeout(closeTimer);
    if (!closed) logger.warn(`the application did not close within ${Math.round((closeBy - started) / 1000)} s of ${signal}: exiting without waiting for it`);
    // The last line of a process that stopped as asked (one that crashed has none): how long its stop took.
    logger.log(`stopped ${((performance.now() - started) / 1000).toFixed(1)} s after ${signal}`);
    process.exit(exitCode);
  };
  stopOnSignals(stop);
  await app.get(DemoService).announce(url);
}

/** SIGTERM (a rolling update) and SIGINT run `stop`; a stop that fails exits 1. */
function stopOnSignals(stop: (signal: string) => Promise<void>): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stop(signal).catch((error: unknown) => {
        process.stderr.write(`shutdown failed: ${String(error)}\n`);
        process.exit(1);
      });
    });
  }
}

/**
 * How long a connection closed at shutdown with a request body still coming stays half-open for
 * the client to read its answer, and how long one whose answer said keep-alive waits for the
 * client's next request (see drainConnections).
 */
const SHUTDOWN_LINGER_MS = 2000;
/** The least time closing the application has after the drain, however late in the grace period it ended. */
const CLOSE_MIN_MS = 5000;

bootstrap().catch((error: unknown) => {
  // A setting found wrong once the application starts (the signing keys): as a wrong value at load.
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  // A database out of reach or refusing the login, a full disk: the environment's, in one line
  // (exit 69, EX_UNAVAILABLE); the orchestrator starts the process again after a pause.
  // A schema the migrations have not made yet (MIGRATIONS_RUN=false, the migration Job still to
  // run) is the database's state too: the start is tried again, and succeeds once it is made.
  // A stored setting check the start cannot read is the database's state too (see setting-checks.ts).
  const environment = error instanceof SchemaMissingError || error instanceof SettingChecksUnreadableError ? error.message : environmentFailure(error);
  if (environment !== undefined) {
    process.stderr.write(`results-service cannot start: ${environment}\n`);
    process.exit(69);
  }
  // Anything unexpected with its stack.
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`results-service failed to start: ${text}\n`);
  process.exit(1);
});


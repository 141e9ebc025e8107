import { Controller, Get, Header, Inject, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiExpectationFailed, ApiHeadersTooLarge, ApiProblemResponse } from '../common/api-responses.js';
import { HealthCheckService, HealthIndicatorService, type HealthCheckResult } from '@nestjs/terminus';
import { SkipThrottle } from '@nestjs/throttler';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ProblemException } from '../common/problem.js';
import { ClientDataVersions } from '../clients/data-versions.js';
import { Public } from '../common/public.decorator.js';
import { RedisGate } from '../redis/redis-gate.js';
import { REDIS } from '../redis/redis.module.js';
import { LifecycleService } from './lifecycle.service.js';

const CHECK_TIMEOUT_MS = 2000;

/** One check of readiness: `up`, or `degraded` with why (Redis: rate limits counted per process; notifications: data versions read per request). */
const CHECK = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['up', 'degraded'] },
    message: { type: 'string' },
    responseTime: { type: 'integer', minimum: 0, description: 'How long the check took, in milliseconds.' },
  },
};
const CHECKS = { type: 'object', additionalProperties: CHECK, example: { database: { status: 'up' }, migrations: { status: 'up' } } };

/** Readiness as the health checks report it. */
const READINESS_SCHEMA = {
  type: 'object',
  required: ['status', 'info', 'error', 'details'],
  // `degraded` when a check is (Redis away, notifications missing): still ready.
  properties: { status: { type: 'string', enum: ['ok', 'degraded'] }, info: CHECKS, error: CHECKS, details: CHECKS },
};

/** Liveness and readiness for the orchestrator; both public. */
@ApiTags('health')
@Public()
@SkipThrottle()
@ApiHeadersTooLarge()
@ApiExpectationFailed()
@Controller('health')
export class HealthController {
  /**
   * The readiness check under way, which every readiness request that comes meanwhile shares:
   * the endpoint is public and unthrottled, and each check takes two statements on a
   * connection of the pool, so that a flood of readiness requests (3,000 at once) filled the
   * pool, queued the data requests behind them and failed the checks themselves past their
   * timeout, which made the replica not ready. One check at a time, and nothing kept after it.
   */
  private running: Promise<HealthCheckResult> | null = null;

  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(REDIS) private readonly redis: Redis | null,
    private readonly lifecycle: LifecycleService,
    private readonly gate: RedisGate,
    private readonly versions: ClientDataVersions,
  ) {}

  @Get('live')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ operationId: 'getLiveness', summary: 'The process answers.' })
  @ApiOkResponse({ description: 'The process is alive.', schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'The service can serve requests: the database answers, its migrations are current, Redis answers when configured.',
  })
  @ApiOkResponse({
    description: 'Ready: each check by name, `up`, or `degraded` for Redis, and for notifications that do not reach the process (still ready).',
    schema: READINESS_SCHEMA,
  })
  @ApiProblemResponse(503, 'Not ready: the detail names the failing checks.', 'Not ready: database failed, migrations failed.')
  async ready(): Promise<unknown> {
    if (this.lifecycle.shuttingDown) {
      throw new ProblemException(503, 'Not ready: shutting down.', { headers: { 'Retry-After': '5' } });
    }
    try {
      this.running ??= this.check().finally(() => (this.running = null));
      return await this.running;
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      const result = error.getResponse() as { error?: Record<string, { message?: unknown } | undefined> };
      // Each failing check by name; the reasons said are migrations only pending and a role without rights (nothing internal otherwise).
      const failing = Object.entries(result.error ?? {}).map(([name, check]) =>
        name === 'migrations' && check?.message === 'pending migrations'
          ? 'migrations pending'
          : name === 'migrations' && check?.message === 'permission denied'
            ? "the database role may not read the service's tables"
            : `${name} failed`,
      );
      throw new ProblemException(503, `Not ready: ${failing.join(', ') || 'a check failed'}.`, {
        headers: { 'Retry-After': '5' },
      });
    }
  }

  /** The checks of readiness: ServiceUnavailableException when one fails. */
  private check(): Promise<HealthCheckResult> {
    const redis = this.redis;
    return this.health.check([
      // Redis only shares rate-limit counters; without it the service keeps serving with
      // counters per process, so it is reported degraded, never not-ready.
      ...(redis ? [() => this.redisCheck(redis)] : []),
      // Announcements that do not reach this replica (a pooler in transaction mode without
      // DATABASE_DIRECT_URL): pages stay right, each reads its version, so degraded, never not-ready.
      ...(this.versions.notificationsMissing
        ? [() => this.indicators.check('notifications').degraded({ message: 'not reaching this process: data versions read per request' })]
        : []),
      () =>
        this.indicators
          .check('database')
          .attempt(async () => {
            if (!this.dataSource.isInitialized) throw new Error('not connected');
            await this.dataSource.query('SELECT 1');
          })
          .withTimeout(CHECK_TIMEOUT_MS),
      () =>
        this.indicators
          .check('migrations')
          .attempt(async () => {
            let pending: boolean;
            try {
              // Without the migrations' table, all are pending: asked of TypeORM, the probe made the
              // table itself (DDL from a replica told not to migrate), and a role that may not
              // create tables was reported as one that may not read them.
              pending = !(await this.migrationsTableExists()) || (await this.dataSource.showMigrations());
            } catch (error) {
              // The migrations table readable by the owner but not by this role: say so, not "migrations failed".
              if ((error as { code?: unknown }).code === '42501') throw new Error('permission denied', { cause: error });
              throw error;
            }
            if (pending) throw new Error('pending migrations');
          })
          .withTimeout(CHECK_TIMEOUT_MS),
    ]);
  }

  /**
   * Whether the migrations' table exists, asked of the catalogue: on PostgreSQL by name in the
   * service's schema (to_regclass needs no grant on the table, as information_schema would).
   */
  private async migrationsTableExists(): Promise<boolean> {
    const { type, schema } = this.dataSource.options as { type: string; schema?: string };
    if (type === 'postgres') {
      const [row] = await this.dataSource.query<{ present: boolean }[]>(`SELECT to_regclass(format('%I.%I', $1::text, 'migrations')) IS NOT NULL AS present`, [schema ?? 'public']);
      return row?.present === true;
    }
    return (await this.dataSource.query<unknown[]>(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'migrations'`)).length > 0;
  }

  private async redisCheck(redis: Redis) {
    const session = this.indicators.check('redis');
    try {
      await Promise.race([
        redis.ping(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS).unref()),
      ]);
    } catch {
      // The client library's words stay in the log (the Redis client's own error line): this answer is public.
      return session.degraded({ message: 'unreachable: rate limits counted per process' });
    }
    // A Redis that answers PING but refuses the counters' commands (out of memory, read-only):
    // counted per process all the same (the gate logged the refusal).
    if (this.gate.refusing) return session.degraded({ message: 'answering with errors: rate limits counted per process' });
    return session.up();
  }
}

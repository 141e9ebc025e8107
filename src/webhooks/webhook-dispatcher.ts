import { randomBytes } from 'node:crypto';
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { SecretBox } from '../common/secret-box.js';
import { AppConfig } from '../config/app-config.js';
import { LifecycleService } from '../health/lifecycle.service.js';
import { visitsChangedEvent } from './webhook-event.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { signingSecrets, webhookSecretBox } from './webhook-secrets.js';
import { sendEvent, type WebhookResult } from './webhook-sender.js';
import { WebhooksRepository, type ClaimedDelivery } from './webhooks.repository.js';

/** The longest wait between two attempts of one event. */
const MAX_BACKOFF_MS = 60 * 60 * 1000;

/**
 * The wait before attempt `attempts + 1`: the base doubled per attempt made, capped at an
 * hour, with "equal jitter" (half fixed, half random) so events that failed together do not
 * come back together.
 */
export function backoffMs(base: number, attempts: number, random: () => number = Math.random): number {
  const delay = Math.min(base * 2 ** Math.max(0, attempts - 1), MAX_BACKOFF_MS);
  return delay / 2 + random() * (delay / 2);
}

/**
 * Delivers the outbox in the background, in every process that serves HTTP (not in the
 * operator CLI's application context). Every WEBHOOKS_POLL_MS it claims due events for its
 * free slots (WEBHOOKS_CONCURRENCY overall, WEBHOOKS_CONCURRENCY_PER_ENDPOINT per endpoint,
 * so a slow receiver holds only its own), sends each, and records the outcome. A claim's
 * lease is twice the request timeout: an event whose process died is taken again after it.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private readonly box: SecretBox;
  private readonly inFlight = new Map<string, number>();
  /** The deliveries in flight, each with the time by which its request has been answered or timed out (performance.now()'s clock, ms). */
  private readonly deliveries = new Map<Promise<void>, number>();
  private timer: NodeJS.Timeout | null = null;
  private tick: Promise<void> | null = null;
  private started = false;
  private stopped = false;
  /** The last claim filled every free slot: more may be due, so a freed slot polls at once. */
  private backlog = false;
  private lastProblem: string | null = null;

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly config: AppConfig,
    private readonly metrics: WebhookMetrics,
    private readonly lifecycle: LifecycleService,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.box = webhookSecretBox(config.API_KEY_HASH_KEY);
  }

  onApplicationBootstrap(): void {
    // An application context (the CLI) has no HTTP adapter: it never delivers.
    if (this.adapterHost.httpAdapter) this.start();
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.schedule(0);
  }

  /** Stops claiming and waits for the requests in flight (each bounded by the timeout). */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.tick;
    await Promise.all([...this.deliveries.keys()]);
  }

  /**
   * When the requests of the deliveries in flight have been answered or timed out, at the
   * latest (ms on performance.now()'s clock); null when none is in flight. Closing the
   * application waits for them and records their outcome (see onModuleDestroy): a shutdown leaves it that long, so that the
   * next start does not send an event its receiver took.
   */
  deliveriesEndBy(): number | null {
    return this.deliveries.size === 0 ? null : Math.max(...this.deliveries.values());
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), delayMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    if (this.tick || this.stopped) return;
    this.tick = this.claimAndSend().finally(() => (this.tick = null));
    await this.tick;
    this.schedule(this.config.WEBHOOKS_POLL_MS);
  }

  private async claimAndSend(): Promise<void> {
    const free = this.config.WEBHOOKS_CONCURRENCY - this.deliveries.size;
    // Draining after SIGTERM: what is not claimed yet is left to the other replicas.
    if (free <= 0 || this.lifecycle.shuttingDown) return;
    try {
      // The outbox's clock (the database's on PostgreSQL), not this process's: see WebhooksRepository.now.
      const now = await this.repo.dueNow();
      if (now === null) {
        this.readAgain();
        return;
      }
      const claimed = await this.repo.claim({
        now,
        limit: free,
        inFlight: this.inFlight,
        perEndpoint: this.config.WEBHOOKS_CONCURRENCY_PER_ENDPOINT,
        leaseMs: 2 * this.config.WEBHOOKS_TIMEOUT_MS,
        lockToken: randomBytes(12).toString('hex'),
      });
      this.readAgain();
      this.backlog = claimed.length === free;
      for (const delivery of claimed) this.track(delivery);
    } catch (error) {
      // The database may be away for a while, or its disk full (the look for what is due then
      // works, the claim fails): said once, not on every poll, and again once it is read.
      const problem = (error as Error).message;
      if (problem !== this.lastProblem) this.logger.warn(`webhook outbox not read: ${problem}`);
      this.lastProblem = problem;
    }
  }

  /** A poll that went through: after a problem, said once. */
  private readAgain(): void {
    if (this.lastProblem !== null) this.logger.log('webhook outbox read again');
    this.lastProblem = null;
  }

  private track(d: ClaimedDelivery): void {
    this.inFlight.set(d.endpointId, (this.inFlight.get(d.endpointId) ?? 0) + 1);
    const running: Promise<void> = this.deliver(d)
      .catch((error: unknown) => this.logger.error(`webhook event ${d.eventId}: ${(error as Error).message}`))
      .finally(() => {
        this.deliveries.delete(running);
        const left = (this.inFlight.get(d.endpointId) ?? 1) - 1;
        if (left > 0) this.inFlight.set(d.endpointId, left);
        else this.inFlight.delete(d.endpointId);
        if (this.backlog) this.schedule(0);
      });
    this.deliveries.set(running, performance.now() + this.config.WEBHOOKS_TIMEOUT_MS);
  }

  /** One attempt, signed with the endpoint's secrets; a secret that cannot be opened is a failed attempt too. */
  private async attempt(d: ClaimedDelivery): Promise<WebhookResult> {
    let secrets: string[];
    try {
      secrets = signingSecrets(this.box, d, new Date());
    } catch (error) {
      return { ok: false, status: null, error: (error as Error).message };
    }
    const event = visitsChangedEvent(d.eventId, d.createdAt, d.clientId, d.count);
    return sendEvent({ url: d.url, allowPrivate: d.allowPrivate, secrets }, event, this.config);
  }

  private async deliver(d: ClaimedDelivery): Promise<void> {
    // Narrowed since the event was written (another client, no visits scope): it is not told.
    if (!d.entitled) {
      await this.repo.withdraw(d);
      this.logger.log({ msg: 'webhook event withdrawn: its credential may no longer read the visits it counts', eventId: d.eventId, endpointId: d.endpointId });
      return;
    }
    const started = process.hrtime.bigint();
    const result = await this.attempt(d);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const now = await this.repo.now();
    if (result.ok) {
      this.metrics.observe('delivered', seconds);
      await this.repo.delivered(d, now);
      return;
    }
    await this.failed(d, result, seconds, now);
  }

  /** A failed attempt: retried after the backoff while the retry window lasts, else given up. */
  private async failed(d: ClaimedDelivery, result: WebhookResult, seconds: number, now: Date): Promise<void> {
    const error = result.error ?? 'failed';
    const deadline = d.createdAt.getTime() + this.config.WEBHOOKS_RETRY_HOURS * 3_600_000;
    const givenUp = now.getTime() >= deadline;
    const retryAt = new Date(Math.min(now.getTime() + backoffMs(this.config.WEBHOOKS_BACKOFF_BASE_MS, d.attempts), deadline));
    this.metrics.observe(givenUp ? 'given_up' : 'failed', seconds);
    this.logger.warn({
      msg: givenUp ? 'webhook delivery failed; retries over, endpoint marked failing' : 'webhook delivery failed; will retry',
      eventId: d.eventId,
      endpointId: d.endpointId,
      attempt: d.attempts,
      status: result.status,
      error,
      ...(givenUp ? {} : { retryAt: retryAt.toISOString() }),
    });
    if (givenUp) await this.repo.giveUp(d, error, now);
    else await this.repo.retryLater(d, retryAt, error, now);
  }
}

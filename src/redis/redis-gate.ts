import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';

/** What a command through the gate gave: its answer, or why it was not run or failed. */
export type GateResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** ioredis's error when a command got no answer within `commandTimeout`. */
const TIMED_OUT = 'Command timed out';

/**
 * The way to Redis for the counters shared by replicas (rate limits, token failures). A
 * command is not sent while Redis is not connected, nor, after one went unanswered within the
 * command timeout (a Redis that hangs rather than refuses: stopped, swapping, a network that
 * drops packets), until a PING in the background is answered again: checked every
 * `recheckMs`. Without that, every request would wait out the timeout. Callers count in the
 * process meanwhile. Both changes are logged once, as warnings and recoveries.
 *
 * A command that went unanswered also ends its connection, and the client connects again: an
 * answer lost on the way (a proxy that hung, the socket left open) would otherwise leave every
 * later answer on that connection matched to the command before it, so that no PING was ever
 * answered and the replica counted on its own until restarted. Commands unanswered then are
 * not sent again (`maxRetriesPerRequest: 0`).
 *
 * A Redis that answers but refuses commands with an error (out of memory under `noeviction`, a
 * read-only replica, a role without the commands) is asked on every count, since each refusal
 * comes at once; the first is logged as a warning, and a recovery once a command succeeds
 * `recheckMs` or more after the last refusal (out of memory, Redis still answers the commands
 * that only read: taken as a recovery, they made the two lines alternate many times a second),
 * so that counting per process is said once, not on every request, and readiness reports it
 * (`refusing`).
 */
export class RedisGate {
  /** Set while Redis is taken not to answer: the background check's timer. */
  private recheck: NodeJS.Timeout | null = null;
  private closed = false;
  /** Set while Redis answers commands with errors: the first one's message. */
  private refusal: string | null = null;
  /** When the last command was refused (epoch ms). */
  private lastRefusalAt = 0;

  constructor(
    readonly redis: Redis | null,
    private readonly recheckMs: number,
    private readonly logger: Pick<Logger, 'warn' | 'log'> = new Logger('Redis'),
  ) {}

  /** Whether commands are held back because Redis stopped answering. */
  get unanswering(): boolean {
    return this.recheck !== null;
  }

  /** Whether Redis refuses commands with errors (counted in the process meanwhile): see `refused`. */
  get refusing(): boolean {
    return this.refusal !== null;
  }

  /** `command`'s answer when Redis is there and answering; else why not (then count in the process). */
  async run<T>(command: (redis: Redis) => Promise<T>): Promise<GateResult<T>> {
    if (!this.redis) return { ok: false, reason: 'no Redis is configured' };
    if (this.redis.status !== 'ready') return { ok: false, reason: `Redis is ${this.redis.status}` };
    if (this.recheck) return { ok: false, reason: 'Redis is not answering' };
    let value: T;
    try {
      value = await command(this.redis);
    } catch (error) {
      const message = (error as Error).message;
      if (message === TIMED_OUT) this.stopAsking();
      else if ((error as Error).name === 'ReplyError') this.refused(message);
      return { ok: false, reason: message };
    }
    if (this.refusal !== null && performance.now() - this.lastRefusalAt >= this.recheckMs) {
      this.refusal = null;
      this.logger.log('commands succeed again: rate limits and token failures are shared by the replicas again');
    }
    return { ok: true, value };
  }

  /** Stops the background check (at shutdown). */
  close(): void {
    this.closed = true;
    if (this.recheck) clearTimeout(this.recheck);
    this.recheck = null;
  }

  /** Redis answered a command with an error: said once, until a command succeeds well after the last refusal. */
  private refused(message: string): void {
    this.lastRefusalAt = performance.now();
    if (this.refusal !== null || this.closed) return;
    this.refusal = message;
    this.logger.warn(`answering commands with errors (${message}): rate limits and token failures are counted per process until a command succeeds`);
  }

  private stopAsking(): void {
    if (this.recheck || this.closed) return;
    this.logger.warn(
      `not answering within its command timeout: rate limits and token failures are counted per process until it answers a PING (checked every ${this.recheckMs} ms)`,
    );
    // Once, for the commands in flight that time out together: the connection is ended once.
    this.reconnect();
    this.scheduleCheck();
  }

  private scheduleCheck(): void {
    this.recheck = setTimeout(() => void this.check(), this.recheckMs);
    this.recheck.unref();
  }

  /** Ends the connection a command went unanswered on; the client connects again (its retry strategy). */
  private reconnect(): void {
    if (!this.closed) this.redis!.disconnect(true);
  }

  private async check(): Promise<void> {
    try {
      // Not ready yet (connecting again): the PING fails at once, and is tried again later.
      await this.redis!.ping();
    } catch (error) {
      if (this.closed) return;
      if ((error as Error).message === TIMED_OUT) this.reconnect();
      this.scheduleCheck();
      return;
    }
    if (this.closed) return;
    this.recheck = null;
    this.logger.log('answering again: rate limits and token failures are shared by the replicas again');
  }
}

import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';

interface Window {
  failures: number;
  resetsAt: number;
}

const MAX_TRACKED = 100_000;

/**
 * Counts failed token requests per client id in a fixed window. Once a client id reaches
 * TOKEN_FAILURES_MAX, every token request for it is refused until the window ends, the
 * right secret included, so guessing a secret runs at a few attempts per window.
 */
@Injectable()
export class TokenFailuresService {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly config: AppConfig) {}

  private window(clientId: string, now: number): Window {
    let w = this.windows.get(clientId);
    if (!w || w.resetsAt <= now) {
      if (this.windows.size >= MAX_TRACKED) this.prune(now);
      w = { failures: 0, resetsAt: now + this.config.TOKEN_FAILURES_WINDOW_SECONDS * 1000 };
      this.windows.set(clientId, w);
    }
    return w;
  }

  private prune(now: number): void {
    for (const [id, w] of this.windows) if (w.resetsAt <= now) this.windows.delete(id);
    if (this.windows.size >= MAX_TRACKED) this.windows.clear();
  }

  /** Seconds until the client id may try again, or 0 when it may try now. */
  blockedFor(clientId: string, now = Date.now()): number {
    const w = this.windows.get(clientId);
    if (!w || w.resetsAt <= now || w.failures < this.config.TOKEN_FAILURES_MAX) return 0;
    return Math.max(1, Math.ceil((w.resetsAt - now) / 1000));
  }

  recordFailure(clientId: string, now = Date.now()): void {
    this.window(clientId, now).failures++;
  }
}

import type { HttpAdapterHost } from '@nestjs/core';
import { AppConfig } from '../config/app-config.js';
import type { LifecycleService } from '../health/lifecycle.service.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import type { WebhookMetrics } from './webhook-metrics.js';
import type { WebhooksRepository } from './webhooks.repository.js';

describe('WebhookDispatcher: a problem reading the outbox', () => {
  /** The outbox as a full disk leaves it: what is due can be read, a claim (a write) fails, until `fixed`. */
  function dispatcherOnFullDisk(): { poll: () => Promise<void>; lines: string[]; fix: () => void } {
    let full = true;
    const repo = {
      now: () => Promise.resolve(new Date()),
      dueNow: () => Promise.resolve(new Date()),
      claim: () => (full ? Promise.reject(new Error('database or disk is full')) : Promise.resolve([])),
    } as unknown as WebhooksRepository;
    const lifecycle = { shuttingDown: false } as LifecycleService;
    const dispatcher = new WebhookDispatcher(repo, new AppConfig(), {} as WebhookMetrics, lifecycle, {} as HttpAdapterHost);
    const lines: string[] = [];
    const logger = (dispatcher as unknown as { logger: { warn: (m: string) => void; log: (m: string) => void } }).logger;
    logger.warn = (m) => lines.push(`warn: ${m}`);
    logger.log = (m) => lines.push(`log: ${m}`);
    const poll = (dispatcher as unknown as { claimAndSend: () => Promise<void> }).claimAndSend.bind(dispatcher);
    return { poll, lines, fix: () => (full = false) };
  }

  it('is said once while it lasts, though what is due is still read on every poll, and once when it ends', async () => {
    const { poll, lines, fix } = dispatcherOnFullDisk();
    for (let i = 0; i < 5; i++) await poll();
    expect(lines).toEqual(['warn: webhook outbox not read: database or disk is full']);
    fix();
    await poll();
    await poll();
    expect(lines).toEqual(['warn: webhook outbox not read: database or disk is full', 'log: webhook outbox read again']);
  });
});

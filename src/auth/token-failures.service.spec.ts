import { DataSource } from 'typeorm';
import { loadConfig } from '../config/app-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { TokenFailuresService } from './token-failures.service.js';
import { RedisGate } from '../redis/redis-gate.js';

describe('TokenFailuresService without Redis', () => {
  const config = loadConfig({ TOKEN_FAILURES_MAX: '3', TOKEN_FAILURES_WINDOW_SECONDS: '60' });
  // The metrics' database gauges are only read when scraped; this source is never opened.
  const metrics = new MetricsService(new DataSource({ type: 'better-sqlite3', database: ':memory:' }));

  it('blocks a client id after the allowed failures, for the rest of the window', async () => {
    const failures = new TokenFailuresService(config, new RedisGate(null, 5000), metrics);
    await failures.recordFailure('svc_a', 'g1');
    await failures.recordFailure('svc_a', 'g2');
    // The same wrong secret again is no new guess.
    await failures.recordFailure('svc_a', 'g2');
    expect(await failures.blockedFor('svc_a')).toBe(0);
    await failures.recordFailure('svc_a', 'g3');
    expect(await failures.blockedFor('svc_a')).toBeGreaterThanOrEqual(59);
    expect(await failures.blockedFor('svc_b')).toBe(0);
  });

  it('keeps a lockout while 150,000 other client ids fail (more than it tracks at once)', async () => {
    const failures = new TokenFailuresService(config, new RedisGate(null, 5000), metrics);
    for (let i = 0; i < 3; i++) await failures.recordFailure('svc_a', `g${i}`);
    for (let i = 0; i < 150_000; i++) await failures.recordFailure(`svc_other_${i}`, 'g');
    expect(await failures.blockedFor('svc_a')).toBeGreaterThanOrEqual(50);
  });
});

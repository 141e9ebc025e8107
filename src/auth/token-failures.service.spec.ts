import { loadConfig } from '../config/app-config.js';
import { TokenFailuresService } from './token-failures.service.js';

describe('TokenFailuresService', () => {
  const config = loadConfig({ TOKEN_FAILURES_MAX: '3', TOKEN_FAILURES_WINDOW_SECONDS: '60' });

  it('blocks a client id after the allowed failures until the window ends', () => {
    const failures = new TokenFailuresService(config);
    const t0 = 1_000_000;
    for (let i = 0; i < 2; i++) failures.recordFailure('svc_a', t0);
    expect(failures.blockedFor('svc_a', t0)).toBe(0);
    failures.recordFailure('svc_a', t0);
    expect(failures.blockedFor('svc_a', t0 + 1000)).toBe(59);
    expect(failures.blockedFor('svc_b', t0 + 1000)).toBe(0);
    expect(failures.blockedFor('svc_a', t0 + 60_000)).toBe(0);
  });

  it('starts a new window after the old one ends', () => {
    const failures = new TokenFailuresService(config);
    for (let i = 0; i < 3; i++) failures.recordFailure('svc_a', 0);
    failures.recordFailure('svc_a', 61_000);
    expect(failures.blockedFor('svc_a', 61_000)).toBe(0);
  });
});

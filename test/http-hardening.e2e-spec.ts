import request from 'supertest';
import { startTestApp, type TestApp } from './helpers/test-app.js';

describe(`HTTP hardening (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: '2' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends security headers, a CSP that allows only its own scripts, and no X-Powered-By', async () => {
    const res = await request(t.http).get('/health/live');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("script-src 'self' 'unsafe-inline'");
  });

  it('sends neither HSTS nor upgrade-insecure-requests over plain http (Swagger UI loads at any http address)', async () => {
    for (const path of ['/health/live', '/docs', '/docs/swagger-ui-init.js']) {
      const res = await request(t.http).get(path);
      expect(res.status).toBe(200);
      expect(res.headers['strict-transport-security']).toBeUndefined();
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    }
    const forwardedHttp = await request(t.http).get('/docs').set('X-Forwarded-Proto', 'http');
    expect(forwardedHttp.headers['strict-transport-security']).toBeUndefined();
    expect(forwardedHttp.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
  });

  it('sends HSTS and upgrade-insecure-requests when the trusted proxy says the request came over https', async () => {
    for (const path of ['/health/live', '/docs']) {
      const res = await request(t.http).get(path).set('X-Forwarded-Proto', 'https');
      expect(res.status).toBe(200);
      expect(res.headers['strict-transport-security']).toMatch(/^max-age=\d+; includeSubDomains$/);
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).toMatch(/(^|;)upgrade-insecure-requests(;|$)/);
    }
  });

  it('answers no CORS preflight unless origins are configured', async () => {
    const res = await request(t.http)
      .options('/branches')
      .set('Origin', 'https://bi.example.com')
      .set('Access-Control-Request-Method', 'GET');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses a token form larger than 16 KiB with a 413 problem', async () => {
    const res = await request(t.http)
      .post('/connect/token')
      .type('form')
      .send(`grant_type=client_credentials&scope=${'x'.repeat(20 * 1024)}`);
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(res.text)).toMatchObject({ title: 'Payload Too Large', status: 413 });
    // Refused after the rate limit, like any request: counted, with the limit's headers.
    expect(res.headers['ratelimit-policy']).toMatch(/"default";q=\d+;w=60/);
    expect(res.headers['x-rate-limit-remaining']).toMatch(/^\d+$/);
  });

  it('takes the client address from the ingress (TRUST_PROXY=1) for requests without a key', async () => {
    const from = (ip: string) => request(t.http).get('/.well-known/jwks.json').set('X-Forwarded-For', ip);
    expect((await from('203.0.113.7')).headers.ratelimit).toMatch(/^"default";r=1;/);
    expect((await from('203.0.113.7')).headers.ratelimit).toMatch(/^"default";r=0;/);
    expect((await from('203.0.113.7')).status).toBe(429);
    const other = await from('198.51.100.9');
    expect(other.status).toBe(200);
    expect(other.headers.ratelimit).toMatch(/^"default";r=1;/);
  });
});

describe(`CORS when origins are configured, no trusted proxy (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ CORS_ORIGINS: 'https://bi.example.com' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('allows the configured origin with the API headers, and no other', async () => {
    const preflight = (origin: string) =>
      request(t.http)
        .options('/visits/standard')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'GET')
        .set('Access-Control-Request-Headers', 'authorization,svc-api-key');
    const allowed = await preflight('https://bi.example.com');
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://bi.example.com');
    expect(allowed.headers['access-control-allow-headers']).toContain('svc-api-key');
    const refused = await preflight('https://evil.example.net');
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('lets a browser read the rate-limit, retry and challenge headers', async () => {
    const res = await request(t.http).get('/.well-known/jwks.json').set('Origin', 'https://bi.example.com');
    expect(res.status).toBe(200);
    expect(res.headers['x-rate-limit-limit']).toBe(String(t.config.RATE_LIMIT_PER_MINUTE));
    const exposed = String(res.headers['access-control-expose-headers']).split(',');
    expect(exposed).toEqual(
      expect.arrayContaining(['RateLimit', 'RateLimit-Policy', 'X-Rate-Limit-Limit', 'X-Rate-Limit-Remaining', 'X-Rate-Limit-Reset', 'Retry-After', 'WWW-Authenticate']),
    );
  });

  it('takes X-Forwarded-Proto only from a trusted proxy: no HSTS for a direct plain-http request claiming https', async () => {
    const res = await request(t.http).get('/health/live').set('X-Forwarded-Proto', 'https');
    expect(res.status).toBe(200);
    expect(res.headers['strict-transport-security']).toBeUndefined();
    expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
  });
});

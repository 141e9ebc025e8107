import { apiKeyChallenge, basicChallenge, bearerChallenge } from './challenges.js';

describe('WWW-Authenticate challenges', () => {
  it('names the one realm in each scheme', () => {
    expect(apiKeyChallenge()).toBe('ApiKey realm="svc-results-api", header="svc-api-key"');
    expect(basicChallenge()).toBe('Basic realm="svc-results-api", charset="UTF-8"');
    expect(bearerChallenge()).toBe('Bearer realm="svc-results-api"');
  });

  it('puts the RFC 6750 parameters in a fixed order, dropping what would break the quoting', () => {
    expect(bearerChallenge({ error: 'invalid_token', description: 'The "kid" \\ is unknown.' })).toBe(
      'Bearer realm="svc-results-api", error="invalid_token", error_description="The kid  is unknown."',
    );
    expect(bearerChallenge({ error: 'insufficient_scope', scope: 'visits/standard.read' })).toBe(
      'Bearer realm="svc-results-api", error="insufficient_scope", scope="visits/standard.read"',
    );
  });
});

import { contractViolations } from '../helpers/contract.js';

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const limits = {
  ratelimit: '"default";r=5;t=30',
  'ratelimit-policy': '"default";q=60;w=60',
  'x-rate-limit-limit': '60',
  'x-rate-limit-remaining': '5',
  'x-rate-limit-reset': '2026-11-22T20:31:00.000Z',
  // Not a limit's, but on every answer as well.
  'x-request-id': 'b7e2c1d0-5f3a-4c8e-9d21-0a6b4e8f7c13',
};
const problem = { title: 'Bad Request', status: 400, detail: 'x', instance: 'urn:svc:api:results:error:00000000-0000-4000-8000-000000000000', errors: ['e'] };

/** The checker every HTTP test runs its responses through must itself catch a drift. */
describe('the contract checker', () => {
  it('accepts a response that matches the contract', () => {
    expect(
      contractViolations('GET', '/branches', 200, { ...limits, 'content-type': 'application/json; charset=utf-8' }, json([{ id: 'B', name: 'N', branchCode: null }])),
    ).toEqual([]);
    expect(contractViolations('GET', '/branches', 400, { ...limits, 'content-type': 'application/problem+json' }, json(problem))).toEqual([]);
  });

  it('reports a body that breaks the schema', () => {
    const [violation] = contractViolations('GET', '/branches', 200, { ...limits, 'content-type': 'application/json' }, json([{ id: 7, name: 'N' }]));
    expect(violation).toBe(
      "GET /branches -> 200: body does not match the schema: data/0 must have required property 'branchCode', data/0/id must be string",
    );
  });

  it('reports an undocumented status, content type, path or header', () => {
    expect(contractViolations('GET', '/branches', 418, {}, Buffer.alloc(0))).toEqual(['GET /branches -> 418: status 418 is not documented']);
    expect(contractViolations('GET', '/branches', 400, { ...limits, 'content-type': 'application/json' }, json(problem))).toEqual([
      "GET /branches -> 400: content type 'application/json' is not documented (application/problem+json)",
    ]);
    expect(contractViolations('GET', '/secret', 200, {}, Buffer.alloc(0))).toEqual(['GET /secret -> 200: the path is not in the contract']);
    expect(contractViolations('GET', '/visits/standard', 429, { ...limits, 'content-type': 'application/problem+json' }, json({ ...problem, status: 429 }))).toEqual([
      'GET /visits/standard -> 429: documented header Retry-After is missing',
    ]);
    expect(contractViolations('GET', '/branches', 401, { ...limits, 'content-type': 'application/problem+json' }, json({ ...problem, status: 401 }))).toEqual([
      'GET /branches -> 401: documented header WWW-Authenticate is missing',
    ]);
    // A header documented as optional may be absent: the token endpoint challenges only some 401s.
    const oauth = { error: 'invalid_client', error_description: 'Client authentication failed.' };
    expect(contractViolations('POST', '/connect/token', 401, { ...limits, 'content-type': 'application/json' }, json(oauth))).toEqual([]);
    expect(contractViolations('GET', '/branches', 200, { 'content-type': 'application/json' }, json([]))).toEqual([
      'GET /branches -> 200: documented header RateLimit is missing',
      'GET /branches -> 200: documented header RateLimit-Policy is missing',
      'GET /branches -> 200: documented header X-Rate-Limit-Limit is missing',
      'GET /branches -> 200: documented header X-Rate-Limit-Remaining is missing',
      'GET /branches -> 200: documented header X-Rate-Limit-Reset is missing',
      'GET /branches -> 200: documented header X-Request-Id is missing',
    ]);
  });
});

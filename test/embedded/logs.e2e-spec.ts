import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService } from '../helpers/service-process.js';

interface DemoFile {
  credentials: { clientId: string; clientSecret: string; apiKey: string }[];
}

describe('request logs', () => {
  it('are JSON lines with the request id and problem instance, and never carry secrets', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-logs-'));
    const service = await startService({ DATA_DIR: dataDir, LOG_LEVEL: 'debug' });
    let token: string;
    let demo: DemoFile;
    try {
      demo = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoFile;
      const c = demo.credentials[0];
      const basic = Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64');
      const tokenRes = await fetch(`${service.url}/connect/token`, {
        method: 'POST',
        headers: { 'svc-api-key': c.apiKey, 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
        body: 'grant_type=client_credentials',
      });
      token = ((await tokenRes.json()) as { access_token: string }).access_token;
      await fetch(`${service.url}/connect/token`, {
        method: 'POST',
        headers: { 'svc-api-key': c.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=client_credentials&client_id=${c.clientId}&client_secret=${c.clientSecret}x`,
      });
      // Credentials where they do not belong, in query strings: refused, and kept out of the logs.
      const queried = await fetch(
        `${service.url}/connect/token?grant_type=client_credentials&client_id=${c.clientId}&client_secret=${c.clientSecret}`,
        { method: 'POST', headers: { 'svc-api-key': c.apiKey, 'content-type': 'application/x-www-form-urlencoded' }, body: '' },
      );
      expect(queried.status).toBe(401);
      const unknown = await fetch(`${service.url}/no/such/route?client_secret=${c.clientSecret}`, { method: 'PUT' });
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { detail: string }).detail).toBe('No endpoint has the path /no/such/route.');
      const ok = await fetch(`${service.url}/branches?SvcClientId=1001`, {
        headers: { 'svc-api-key': c.apiKey, authorization: `Bearer ${token}`, 'x-request-id': 'partner-req-42' },
      });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('partner-req-42');
      const denied = await fetch(`${service.url}/branches?SvcClientId=1002`, {
        headers: { 'svc-api-key': c.apiKey, authorization: `Bearer ${token}` },
      });
      const instance = ((await denied.json()) as { instance: string }).instance;
      // Pages with the token verified above: answered ahead of Express (VisitPagesLane), or
      // handed to it when the query is broken; each gets one line, as any request.
      const day = (back: number): string => new Date(Date.now() - back * 86_400_000).toISOString().slice(0, 10);
      const pages = ['Take=5', 'Take=5', 'Take=0'].map((take, i) => ({ id: `partner-page-${i}`, take }));
      for (const { id, take } of pages) {
        await fetch(`${service.url}/visits/standard?SvcClientId=1001&FromDate=${day(10)}&ToDate=${day(1)}&Skip=0&${take}`, {
          headers: { 'svc-api-key': c.apiKey, authorization: `Bearer ${token}`, 'x-request-id': id },
        });
      }
      // The log line of a request follows its response: wait for the complete lines.
      const logged = (text: string, part: string): boolean => text.split('\n').slice(0, -1).some((l) => l.includes(part));
      await service.waitForOutput(
        (text) =>
          logged(text, '"id":"partner-req-42"') && logged(text, `"problemInstance":"${instance}"`) && pages.every(({ id }) => logged(text, `"id":"${id}"`)),
      );
      const lines = service.output().split('\n').filter((l) => l.startsWith('{'));
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records.find((r) => (r.req as { id?: string } | undefined)?.id === 'partner-req-42')).toMatchObject({
        msg: 'request completed',
        res: { statusCode: 200 },
        clientId: c.clientId,
        route: '/branches',
      });
      expect(records.find((r) => r.problemInstance === instance)).toMatchObject({ res: { statusCode: 403 }, route: '/branches' });
      expect(records.map((r) => (r.req as { url?: string } | undefined)?.url)).toEqual(
        expect.arrayContaining([
          `/connect/token?grant_type=client_credentials&client_id=${c.clientId}&client_secret=[redacted]`,
          '/no/such/route?client_secret=[redacted]',
        ]),
      );
      const pageLines = pages.map(({ id }) => records.filter((r) => (r.req as { id?: string } | undefined)?.id === id));
      expect(pageLines.map((found) => found.length)).toEqual([1, 1, 1]);
      for (const [found] of pageLines.slice(0, 2)) {
        expect(found).toMatchObject({ msg: 'request completed', res: { statusCode: 200 }, clientId: c.clientId, route: '/visits/standard' });
      }
      expect(pageLines[2][0]).toMatchObject({ res: { statusCode: 400 }, route: '/visits/standard', problemInstance: expect.any(String) });
      // JSON.parse keeps the last of duplicated keys: each key must be written once in the text itself.
      const requestLines = lines.filter((l) => l.includes('"msg":"request completed"'));
      expect(requestLines.length).toBeGreaterThanOrEqual(4);
      for (const line of requestLines) {
        const count = (key: string): number => line.split(`"${key}":`).length - 1;
        expect({ line, route: count('route'), req: count('req'), res: count('res') }).toEqual({ line, route: 1, req: 1, res: 1 });
        expect(count('clientId')).toBeLessThanOrEqual(1);
        expect(count('problemInstance')).toBeLessThanOrEqual(1);
      }
    } finally {
      await service.stop();
    }
    const text = service.output().split('\n').filter((l) => l.startsWith('{')).join('\n');
    for (const c of demo.credentials) {
      expect(text).not.toContain(c.clientSecret);
      expect(text).not.toContain(c.apiKey);
    }
    expect(token.length).toBeGreaterThan(100);
    expect(text).not.toContain(token);
  });
});

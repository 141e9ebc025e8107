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
      const ok = await fetch(`${service.url}/branches?SvcClientId=1001`, {
        headers: { 'svc-api-key': c.apiKey, authorization: `Bearer ${token}`, 'x-request-id': 'partner-req-42' },
      });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('partner-req-42');
      const denied = await fetch(`${service.url}/branches?SvcClientId=1002`, {
        headers: { 'svc-api-key': c.apiKey, authorization: `Bearer ${token}` },
      });
      const instance = ((await denied.json()) as { instance: string }).instance;
      // The log line of a request follows its response: wait for both complete lines.
      const logged = (text: string, part: string): boolean => text.split('\n').slice(0, -1).some((l) => l.includes(part));
      await service.waitForOutput((text) => logged(text, '"id":"partner-req-42"') && logged(text, `"problemInstance":"${instance}"`));
      const lines = service.output().split('\n').filter((l) => l.startsWith('{'));
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records.find((r) => (r.req as { id?: string } | undefined)?.id === 'partner-req-42')).toMatchObject({
        msg: 'request completed',
        res: { statusCode: 200 },
        clientId: c.clientId,
        route: '/branches',
      });
      expect(records.find((r) => r.problemInstance === instance)).toMatchObject({ res: { statusCode: 403 }, route: '/branches' });
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

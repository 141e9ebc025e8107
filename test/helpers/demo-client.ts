import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DemoCredential {
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

/**
 * The first demo credential a service started on `dataDir` wrote (data/demo-credentials.json),
 * and the headers of a data request with a token it was given, as a partner sends them.
 */
export async function demoHeaders(url: string, dataDir: string): Promise<{ demo: DemoCredential; headers: Record<string, string> }> {
  const demo = (JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as { credentials: DemoCredential[] }).credentials[0];
  const response = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'svc-api-key': demo.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: demo.clientId, client_secret: demo.clientSecret }),
  });
  if (response.status !== 200) throw new Error(`the demo credential's token request answered ${response.status}: ${await response.text()}`);
  const { access_token: token } = (await response.json()) as { access_token: string };
  return { demo, headers: { 'svc-api-key': demo.apiKey, authorization: `Bearer ${token}` } };
}

import request from 'supertest';
import type { App } from 'supertest/types.js';
import { CredentialsService, type IssuedCredential, type NewCredentialInput } from '../../src/auth/credentials.service.js';
import { ClientsService } from '../../src/clients/clients.service.js';
import type { TestApp } from './test-app.js';

/** Two clients with a brand each, for auth tests. */
export async function seedClients(t: TestApp): Promise<void> {
  const clients = t.app.get(ClientsService);
  await clients.addClient(1001, 'Acme Dining');
  await clients.addClient(1002, 'Other Group');
  await clients.addBrand(1001, 5, 'Acme Grill');
  await clients.addBrand(1002, 21, 'Crown');
}

export function issueCredential(t: TestApp, input: Partial<NewCredentialInput> = {}): Promise<IssuedCredential> {
  return t.app.get(CredentialsService).add({
    clients: [1001],
    scopes: ['visits/standard.read', 'visits/plus.read', 'branches/standard.read', 'menus/standard.read', 'menus/dishes/standard.write'],
    ...input,
  });
}

export async function tokenFor(http: App, c: IssuedCredential, scope?: string): Promise<string> {
  const form: Record<string, string> = { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret };
  if (scope !== undefined) form.scope = scope;
  const res = await request(http).post('/connect/token').set('svc-api-key', c.apiKey).type('form').send(form);
  if (res.status !== 200) throw new Error(`token request failed: ${res.status} ${res.text}`);
  return (res.body as { access_token: string }).access_token;
}

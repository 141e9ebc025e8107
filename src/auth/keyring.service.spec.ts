import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/app-config.js';
import type { AuthRepository } from './auth.repository.js';
import { KeyringService } from './keyring.service.js';

/** The keys come from configuration: the repository is never asked. */
const noRepository = {} as AuthRepository;

/** What the keyring's start says is wrong with the configured keys. */
async function refusalOf(env: Record<string, string>): Promise<string[]> {
  try {
    await new KeyringService(noRepository, loadConfig(env)).onModuleInit();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the signing keys to be refused');
}

const pem = (curve: string): string => generateKeyPairSync('ec', { namedCurve: curve }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const damaged = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';

describe('KeyringService with configured keys', () => {
  it('refuses a damaged PKCS#8 key in JWT_SIGNING_KEYS as a configuration error naming the setting', async () => {
    expect(await refusalOf({ JWT_SIGNING_KEYS: damaged })).toEqual([
      expect.stringMatching(/^JWT_SIGNING_KEYS: its key cannot be read as a PKCS#8 private key \(.+\)$/),
    ]);
    expect(await refusalOf({ JWT_SIGNING_KEYS: pem('P-256') + damaged })).toEqual([
      expect.stringMatching(/^JWT_SIGNING_KEYS: key 2 of 2 cannot be read as a PKCS#8 private key \(.+\)$/),
    ]);
  });

  it('refuses a damaged key in JWT_SIGNING_KEYS_FILE naming that setting, and shows nothing of the key', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'signing-keys.pem');
    writeFileSync(file, damaged);
    const problems = await refusalOf({ JWT_SIGNING_KEYS_FILE: file });
    expect(problems).toEqual([expect.stringMatching(/^JWT_SIGNING_KEYS_FILE: its key cannot be read as a PKCS#8 private key \(.+\)$/)]);
    expect(problems[0]).not.toContain('AAAA');
  });

  it('refuses a key whose private part was changed (it still parses, but signs nothing its public key verifies)', async () => {
    const lines = pem('P-256').split('\n');
    lines[1] = `${lines[1].slice(0, 58)}${lines[1][58] === 'A' ? 'B' : 'A'}${lines[1].slice(59)}`;
    const flipped = lines.join('\n');
    expect(await refusalOf({ JWT_SIGNING_KEYS: flipped })).toEqual(['JWT_SIGNING_KEYS: its key is damaged: its private part does not match its public key']);
    expect(await refusalOf({ JWT_SIGNING_KEYS: pem('P-256') + flipped })).toEqual([
      'JWT_SIGNING_KEYS: key 2 of 2 is damaged: its private part does not match its public key',
    ]);
  });

  it('refuses keys on another curve or of another type, as before', async () => {
    expect(await refusalOf({ JWT_SIGNING_KEYS: pem('P-384') })).toEqual(['JWT_SIGNING_KEYS: must hold P-256 (ES256) keys']);
    const ed25519 = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    expect(await refusalOf({ JWT_SIGNING_KEYS: pem('P-256') + ed25519 })).toEqual(['JWT_SIGNING_KEYS: must hold P-256 (ES256) keys']);
  });

  it('signs with the first of good P-256 keys, and verifies with all of them', async () => {
    const keyring = new KeyringService(noRepository, loadConfig({ JWT_SIGNING_KEYS: pem('P-256') + pem('P-256') }));
    await keyring.onModuleInit();
    const { keys } = await keyring.jwks();
    expect(keys).toHaveLength(2);
    expect((await keyring.signingKey()).kid).toBe(keys[0].kid);
  });
});

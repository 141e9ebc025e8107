import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService } from '../helpers/service-process.js';

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A regular file: a folder under it cannot be made by any process, root included. */
function aFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'results-refusals-')), 'a-file');
  writeFileSync(file, 'not a folder');
  return file;
}

describe('a start whose settings name what cannot be used stops with exit 78 and one line naming the setting', () => {
  it('stops when DATA_DIR cannot be made, before the database is opened', async () => {
    const dataDir = join(aFile(), 'data');
    await expect(startService({ DATA_DIR: dataDir })).rejects.toThrow(
      new RegExp(`^service exited with 78:\nInvalid configuration:\n {2}- DATA_DIR: cannot use ${escaped(dataDir)}: ENOTDIR: [^\n]*\n$`),
    );
  });

  it('stops when the folder of IMAGE_STORAGE=filesystem cannot be made, rather than be ready and fail every upload', async () => {
    const folder = join(aFile(), 'img');
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    await expect(startService({ DATA_DIR: dataDir, IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder })).rejects.toThrow(
      new RegExp(`^service exited with 78:\nInvalid configuration:\n {2}- IMAGE_STORAGE_DIR: cannot use ${escaped(folder)}: ENOTDIR: [^\n]*\n$`),
    );
  });

  it('stops on a damaged PKCS#8 signing key, without a stack', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    const damaged = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
    const refusal = startService({ DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn', JWT_SIGNING_KEYS: damaged });
    await expect(refusal).rejects.toThrow(
      /^service exited with 78:\n(.*\n)*Invalid configuration:\n {2}- JWT_SIGNING_KEYS: its key cannot be read as a PKCS#8 private key \([^\n]+\)\n$/,
    );
    await expect(refusal).rejects.not.toThrow(/\n {4}at /);
  });
});

describe('a start whose database is out of reach', () => {
  it('stops with exit 69 and one line, without a stack or a word of retrying', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    // A port nothing listens on: the listener is closed again before the start.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const refusal = startService({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test`, LOG_LEVEL: 'info' });
    await expect(refusal).rejects.toThrow(
      new RegExp(`^service exited with 69:\n(.*\n)*results-service cannot start: the database cannot be used: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\n$`),
    );
    await expect(refusal).rejects.not.toThrow(/\n {4}at |Retrying/);
  });
});

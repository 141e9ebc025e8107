import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeDurably } from './durable-file.js';

describe('writeDurably', () => {
  it('writes the file whole with its mode, replacing one that was there, and leaves no temporary file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'durable-'));
    const path = join(dir, 'credentials.json');
    writeFileSync(path, 'the old text, longer than the new');
    await writeDurably(path, '{"new":true}\n', 0o600);
    expect(readFileSync(path, 'utf8')).toBe('{"new":true}\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['credentials.json']);
  });

  it('leaves nothing of a write that fails, and what was there as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'durable-'));
    // The name is taken by a folder that is not empty: the rename fails, as a full disk would fail the write.
    mkdirSync(join(dir, 'taken'));
    writeFileSync(join(dir, 'taken', 'kept'), 'kept');
    await expect(writeDurably(join(dir, 'taken'), 'bytes', 0o640)).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(['taken']);
    expect(readFileSync(join(dir, 'taken', 'kept'), 'utf8')).toBe('kept');
  });
});

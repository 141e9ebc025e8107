import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileImageStorage } from './image-storage.js';

describe('FileImageStorage', () => {
  const id = '0b7f3c2e-58a1-4c55-9d0e-3f1f8b6a2c11';
  const image = { contentType: 'image/png', width: 1, height: 1, data: Buffer.from('png bytes'), sha256: 'x' };

  it('writes the image under its id, through a temporary file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    const stored = await new FileImageStorage(dir).put(id, image);
    expect(stored).toEqual({ data: null, storageKey: id });
    expect(readdirSync(dir)).toEqual([id]);
    expect(readFileSync(join(dir, id)).equals(image.data)).toBe(true);
  });

  it('leaves no temporary file behind when the write fails (a full disk keeps no room taken)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    // The name is taken by a folder that is not empty: the rename fails, as a write to a full disk would.
    mkdirSync(join(dir, id));
    writeFileSync(join(dir, id, 'x'), '');
    await expect(new FileImageStorage(dir).put(id, image)).rejects.toThrow();
    expect(readdirSync(dir)).toEqual([id]);
  });
});

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/app-config.js';
import { FileImageStorage, prepareImageFolder } from './image-storage.js';

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

describe('prepareImageFolder, at start', () => {
  it('makes the folder of IMAGE_STORAGE=filesystem, by default DATA_DIR/images', () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'images-')), 'data');
    prepareImageFolder(loadConfig({ IMAGE_STORAGE: 'filesystem', DATA_DIR: dataDir }));
    expect(statSync(join(dataDir, 'images')).isDirectory()).toBe(true);
  });

  it('refuses a folder that cannot be made, naming IMAGE_STORAGE_DIR, rather than let every upload fail', () => {
    // A path under a regular file: no process can make it, root included.
    const file = join(mkdtempSync(join(tmpdir(), 'images-')), 'a-file');
    writeFileSync(file, '');
    const config = loadConfig({ IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: join(file, 'img') });
    expect(() => prepareImageFolder(config)).toThrow(ConfigError);
    expect(() => prepareImageFolder(config)).toThrow(`IMAGE_STORAGE_DIR: cannot use ${join(file, 'img')}: ENOTDIR: not a directory`);
  });

  it('leaves the folder alone when images are kept in the database', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'images-')), 'a-file');
    writeFileSync(file, '');
    expect(() => prepareImageFolder(loadConfig({ IMAGE_STORAGE: 'database', IMAGE_STORAGE_DIR: join(file, 'img') }))).not.toThrow();
  });
});

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/app-config.js';
import { unavailableCause } from '../common/problem.filter.js';
import { DamagedImageFile, FileImageStorage, ImageFolderMissing, imageStorageFor, prepareImageFolder } from './image-storage.js';

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

  it('writes nothing where its folder has gone (a volume no longer mounted), rather than make it again', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'images-')), 'images');
    mkdirSync(dir);
    const storage = new FileImageStorage(dir);
    rmSync(dir, { recursive: true });
    const refused = await storage.put(id, image).then(() => null, (error: unknown) => error);
    expect(refused).toBeInstanceOf(ImageFolderMissing);
    expect(refused).toMatchObject({ code: 'ENOENT', path: dir, message: expect.stringContaining(`The image folder ${dir} is not there`) });
    expect(unavailableCause(refused)).toBe('storage');
    expect(existsSync(dir)).toBe(false);
  });

  it("says the folder gone, not the image's file missing, when an image is read from a folder that has gone", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'images-')), 'images');
    mkdirSync(dir);
    const storage = new FileImageStorage(dir);
    const stored = await storage.put(id, image);
    const other = await storage.put('1b7f3c2e-58a1-4c55-9d0e-3f1f8b6a2c12', image);
    rmSync(join(dir, other.storageKey!));
    // One file missing from the folder: that image's.
    await expect(storage.read(other)).rejects.toBeInstanceOf(DamagedImageFile);
    rmSync(dir, { recursive: true });
    const refused = await storage.read(stored).then(() => null, (error: unknown) => error);
    expect(refused).toBeInstanceOf(ImageFolderMissing);
    expect(unavailableCause(refused)).toBe('storage');
  });
});

describe('FileImageStorage.read', () => {
  const id = '7a1c9e2b-3d4f-4a5b-8c6d-9e0f1a2b3c4d';
  const data = Buffer.from('the stored image bytes');
  const stored = { data: null, storageKey: id, bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') };
  const place = (): { storage: FileImageStorage; file: string } => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    writeFileSync(join(dir, id), data);
    return { storage: new FileImageStorage(dir), file: join(dir, id) };
  };

  it('gives the bytes of a file that holds what was stored', async () => {
    const { storage } = place();
    expect((await storage.read(stored)).equals(data)).toBe(true);
  });

  it('refuses a file missing, cut short or changed, naming the file and what is wrong with it', async () => {
    const { storage, file } = place();
    writeFileSync(file, data.subarray(0, 5));
    await expect(storage.read(stored)).rejects.toThrow(
      new DamagedImageFile(file, false, `holds 5 bytes where ${data.length} were stored`),
    );
    writeFileSync(file, Buffer.from(data.toString().toUpperCase()));
    const changed = storage.read(stored);
    await expect(changed).rejects.toBeInstanceOf(DamagedImageFile);
    await expect(changed).rejects.toThrow(`The image file ${file} does not hold the bytes stored (their SHA-256 differs): restore it from a backup, or upload the dish's image again.`);
    rmSync(file);
    await expect(storage.read(stored)).rejects.toMatchObject({ missing: true, message: expect.stringContaining(`${file} is missing`) as unknown });
  });
});

describe('imageStorageFor, after IMAGE_STORAGE was switched', () => {
  const id = '5d0e8a44-1f2b-4c3d-9e8f-0a1b2c3d4e5f';
  const image = { contentType: 'image/png', width: 1, height: 1, data: Buffer.from('png bytes'), sha256: 'x' };

  it('reads an image stored in a file from its file, and removes the file when the image is replaced, with images now in the database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    const inFile = await imageStorageFor(loadConfig({ IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: dir })).put(id, image);
    const now = imageStorageFor(loadConfig({ IMAGE_STORAGE: 'database', IMAGE_STORAGE_DIR: dir }));
    expect((await now.read(inFile)).equals(image.data)).toBe(true);
    // New images go to the database.
    expect(await now.put('6d0e8a44-1f2b-4c3d-9e8f-0a1b2c3d4e5f', image)).toEqual({ data: image.data, storageKey: null });
    await now.discard(inFile);
    expect(existsSync(join(dir, id))).toBe(false);
  });

  it('reads an image stored in the database from its row, with images now in files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'images-'));
    const inRow = await imageStorageFor(loadConfig({ IMAGE_STORAGE: 'database', IMAGE_STORAGE_DIR: dir })).put(id, image);
    const now = imageStorageFor(loadConfig({ IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: dir }));
    expect((await now.read(inRow)).equals(image.data)).toBe(true);
    await now.discard(inRow);
    expect(await now.put(id, image)).toEqual({ data: null, storageKey: id });
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

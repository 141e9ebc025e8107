import { createHash, randomUUID } from 'node:crypto';
import { lstat, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { writeDurably } from '../common/durable-file.js';
import { usableFolder, type AppConfig } from '../config/app-config.js';
import type { PreparedImage } from './image-inspector.js';

/** Where an image's bytes went: into its row (`data`) or into a file (`storageKey`). */
export interface StoredBytes {
  data: Buffer | null;
  storageKey: string | null;
  /** What was stored, which a file read back is checked against (the image's row has both). */
  bytes?: number;
  sha256?: string;
}

/**
 * An image's file that is not what was stored: missing, cut short or changed on the volume (a
 * restore that left it out, a disk fault, a hand in the folder). Its bytes are not served as the
 * image, whose ETag and year-long cache would keep them; the request fails and the log says which.
 */
export class DamagedImageFile extends Error {
  constructor(
    readonly file: string,
    readonly missing: boolean,
    why: string,
  ) {
    super(`The image file ${file} ${why}: restore it from a backup, or upload the dish's image again.`);
    this.name = 'DamagedImageFile';
  }
}

/**
 * The images' folder is not there while the service runs: removed, or a volume no longer
 * mounted. Nothing is written or read then (a 503 whose log line says so): made again on a
 * write, the folder took the new images on the container's own disk, beside none of the
 * others, which all answered 500.
 */
export class ImageFolderMissing extends Error {
  readonly code = 'ENOENT';

  constructor(readonly path: string) {
    super(`The image folder ${path} is not there (removed, or its volume not mounted): nothing was written or read; mount or restore it (it was made at start).`);
    this.name = 'ImageFolderMissing';
  }
}

/**
 * Keeps the bytes of dish images. The row in dish_images is written in the same
 * transaction as the dish; a file written for a transaction that then fails is discarded,
 * and a replaced image's file is removed after the commit, so no image is left orphaned.
 */
export interface ImageStorage {
  put(id: string, image: PreparedImage): Promise<StoredBytes>;
  read(stored: StoredBytes): Promise<Buffer>;
  /** Removes what `put` wrote (after a failed transaction, or once a replacement committed). */
  discard(stored: StoredBytes): Promise<void>;
  /** The folder image files lie in: where new ones go, or those stored before a switch to the database (see ImageSweeper). */
  readonly folder: FileImageStorage;
}

/**
 * The default: bytes in the database row; works for any number of replicas with no shared disk.
 * An image stored in a file before IMAGE_STORAGE was switched to the database is still read
 * from the folder (see imageStorageFor), and its file removed when it is replaced.
 */
export class DatabaseImageStorage implements ImageStorage {
  /** The folder of images stored before the switch, which `images sweep` tidies as well. */
  constructor(readonly folder: FileImageStorage) {}

  put(_id: string, image: PreparedImage): Promise<StoredBytes> {
    return Promise.resolve({ data: image.data, storageKey: null });
  }

  read(stored: StoredBytes): Promise<Buffer> {
    return stored.data ? Promise.resolve(stored.data) : this.folder.read(stored);
  }

  discard(stored: StoredBytes): Promise<void> {
    return this.folder.discard(stored);
  }
}

/** A file of the image folder, as the sweep sees it. */
export interface StoredFile {
  name: string;
  /** `image`: named by an image's key; `temporary`: a write under way or cut short; `other`: anything else, never touched. */
  kind: 'image' | 'temporary' | 'other';
  bytes: number;
  modifiedAt: Date;
}

const IMAGE_KEY = /^[0-9a-f-]{36}$/;
const TEMPORARY = /^\.[0-9a-f-]{36}\.[0-9a-f-]{36}\.tmp$/;

/** Bytes in a folder (a shared volume for several replicas); the row keeps the file name. */
export class FileImageStorage implements ImageStorage {
  constructor(readonly dir: string) {}

  /** The folder is this storage's own. */
  get folder(): FileImageStorage {
    return this;
  }

  /** The folder's plain files (none when it does not exist yet). */
  async files(): Promise<StoredFile[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const files: StoredFile[] = [];
    for (const name of names.sort()) {
      const stat = await lstat(join(this.dir, name)).catch(() => null);
      if (!stat?.isFile()) continue;
      const kind = IMAGE_KEY.test(name) ? 'image' : TEMPORARY.test(name) ? 'temporary' : 'other';
      files.push({ name, kind, bytes: stat.size, modifiedAt: stat.mtime });
    }
    return files;
  }

  /**
   * The size of an image's file, or null when the folder does not hold it (or holds something
   * else than a file under its name). Any other error (EACCES) is thrown: an unreadable file is
   * not a missing one.
   */
  async sizeOf(key: string): Promise<number | null> {
    const stat = await lstat(this.fileOf({ data: null, storageKey: key })).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    return stat?.isFile() ? stat.size : null;
  }

  /**
   * Now by the clock that stamps the folder's files: the modification time of a file written
   * there (one of the temporary form, which a sweep removes if it is left behind). On a volume
   * shared by the replicas that is the file server's or the writers' clock, which the command
   * running a sweep may not share. Null when no file can be written (a read-only mount).
   */
  async now(): Promise<Date | null> {
    const probe = join(this.dir, `.${randomUUID()}.${randomUUID()}.tmp`);
    try {
      await writeFile(probe, '', { mode: 0o600 });
      return (await lstat(probe)).mtime;
    } catch {
      return null;
    } finally {
      await rm(probe, { force: true }).catch(() => undefined);
    }
  }

  /** Removes an image or temporary file of the folder by its name (see files). */
  async remove(file: StoredFile): Promise<void> {
    if (file.kind === 'other' || file.name.includes('/')) throw new Error(`not a file of the image storage: ${file.name}`);
    await removeFile(join(this.dir, file.name));
  }

  async put(id: string, image: PreparedImage): Promise<StoredBytes> {
    if (!(await this.folderThere())) throw new ImageFolderMissing(this.dir);
    // On disk before the row that names it commits (both databases sync their commits): a
    // power loss after the answer must not leave the row naming an empty or missing file. A
    // write that fails (a full disk) leaves no part of the image to hold the room: no row will
    // name it, since the caller's transaction fails. The temporary file's name is one the
    // sweep knows (`.<id>.<uuid>.tmp`); a new file whose folder would not sync goes too.
    const final = join(this.dir, id);
    try {
      await writeDurably(final, image.data, 0o640);
    } catch (error) {
      await rm(final, { force: true }).catch(() => undefined);
      throw error;
    }
    return { data: null, storageKey: id };
  }

  /**
   * The image's file, checked against what was stored (its size and SHA-256, when given); one
   * whose bytes are in its row (stored before IMAGE_STORAGE was switched to files) from there.
   */
  async read(stored: StoredBytes): Promise<Buffer> {
    if (stored.data) return stored.data;
    const file = this.fileOf(stored);
    let data: Buffer;
    try {
      data = await readFile(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // The whole folder gone (a volume no longer mounted) is the storage's fault, a 503 as a
      // write is; one file missing from it is that image's.
      if (!(await this.folderThere())) throw new ImageFolderMissing(this.dir);
      throw new DamagedImageFile(file, true, 'is missing');
    }
    if (stored.bytes !== undefined && data.length !== stored.bytes) {
      throw new DamagedImageFile(file, false, `holds ${data.length} bytes where ${stored.bytes} were stored`);
    }
    if (stored.sha256 !== undefined && createHash('sha256').update(data).digest('hex') !== stored.sha256) {
      throw new DamagedImageFile(file, false, 'does not hold the bytes stored (their SHA-256 differs)');
    }
    return data;
  }

  async discard(stored: StoredBytes): Promise<void> {
    if (stored.storageKey) await removeFile(this.fileOf(stored));
  }

  /** Whether the images' folder is there, a folder (made at start; see ImageFolderMissing). */
  private async folderThere(): Promise<boolean> {
    return (await lstat(this.dir).catch(() => null))?.isDirectory() ?? false;
  }

  /** The path of an image's file, its key checked to be one (never a path of its own). */
  private fileOf(stored: StoredBytes): string {
    const key = stored.storageKey ?? '';
    if (!IMAGE_KEY.test(key)) throw new Error('invalid image storage key');
    return join(this.dir, key);
  }
}

/**
 * Removes a file; one already gone is fine. Not `rm`, which takes a refused unlink (EPERM: a file
 * of another owner in a sticky folder) for a folder and reports the scan it tries then
 * (ENOTDIR), where the operator needs to read why the file stayed.
 */
async function removeFile(path: string): Promise<void> {
  await unlink(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}


/** The folder of IMAGE_STORAGE=filesystem: IMAGE_STORAGE_DIR, else DATA_DIR/images. */
function imageFolder(config: AppConfig): string {
  return resolve(config.IMAGE_STORAGE_DIR ?? join(config.DATA_DIR, 'images'));
}

/**
 * The storage new images go to, as IMAGE_STORAGE says. Every image is read from where it was
 * stored, whatever IMAGE_STORAGE said then: switching it applies to images stored from then on.
 */
export function imageStorageFor(config: AppConfig): ImageStorage {
  const folder = new FileImageStorage(imageFolder(config));
  return config.IMAGE_STORAGE === 'filesystem' ? folder : new DatabaseImageStorage(folder);
}

/**
 * Makes the folder of IMAGE_STORAGE=filesystem and checks that this process may write in it:
 * called at start, so that a folder it cannot use stops the start naming IMAGE_STORAGE_DIR
 * (a ConfigError) instead of a ready service failing every upload.
 */
export function prepareImageFolder(config: AppConfig): void {
  if (config.IMAGE_STORAGE === 'filesystem') usableFolder('IMAGE_STORAGE_DIR', imageFolder(config));
}

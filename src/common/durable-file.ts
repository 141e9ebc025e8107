import { randomUUID } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Writes a file so that it is on the disk, whole, when this resolves: through a temporary file
 * of the same folder (`.<name>.<uuid>.tmp`), synced, renamed over the name, and the folder
 * synced. A power loss or a file-system fault leaves the old file or the new one, never an
 * empty or cut one. A write that fails before the rename leaves no temporary file to hold the
 * room, and the old file as it was; one whose folder then fails to sync leaves the new file in
 * its place (the old one is gone by then): a caller that must not keep it removes it.
 */
export async function writeDurably(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const folder = dirname(path);
  const temp = join(folder, `.${basename(path)}.${randomUUID()}.tmp`);
  try {
    const file = await open(temp, 'wx', mode);
    try {
      await file.writeFile(data);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  await syncFolder(folder);
}

/** Makes a folder's entries durable (a file renamed into it). A file system that cannot sync a folder (EINVAL) keeps them as it does. */
async function syncFolder(dir: string): Promise<void> {
  const folder = await open(dir, 'r');
  try {
    await folder.sync().catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EINVAL' && error.code !== 'ENOTSUP') throw error;
    });
  } finally {
    await folder.close();
  }
}

import { Inject, Injectable } from '@nestjs/common';
import { OperatorError } from '../common/operator-error.js';
import { DamagedImageFile, FileImageStorage, type ImageStorage, type StoredFile } from './image-storage.js';
import { IMAGE_STORAGE, MenusRepository } from './menus.repository.js';

/** What a sweep of the image folder found and did. */
export interface SweepReport {
  /** The folder swept; null when images are kept in the database and the folder holds no files of the storage (nothing to sweep). */
  folder: string | null;
  /** Files of the folder looked at (images and temporary files). */
  checked: number;
  /** Files no image row names (or temporary files), old enough: removed, or to be with --dry-run. */
  orphans: { name: string; bytes: number; modifiedAt: string }[];
  /** Orphans younger than the minimum age: left, since a write may still be under way. */
  tooRecent: number;
  removed: boolean;
  /**
   * Images whose row names a file the folder does not hold (`bytes` null), holds with another
   * size than stored, or (with `verify`) with other bytes of the same size: never touched, for
   * the operator.
   */
  damaged: { name: string; bytes: number | null; storedBytes: number; why: 'missing' | 'size' | 'content' }[];
  /**
   * Of a dry run, why the sweep itself would be refused (the folder does not look like the
   * database's: see anotherDatabasesFolder); absent when it would not be.
   */
  notThisDatabasesFolder?: string;
}

/**
 * Removes what the filesystem image storage holds that no image names: files written by a
 * process stopped before its transaction committed (SIGKILL, a node that died), or replaced
 * images whose file it had no time (or no permission) to remove after its commit. With images
 * kept in the database, the folder of those stored before the switch is swept alike. Files
 * younger than the minimum age are left: an upload on another replica may have written its
 * file and not yet committed; so are those younger than a transaction still open that may have
 * written one (PostgreSQL), and on SQLite the last look and the removals wait for the writer
 * in progress, if any, to commit.
 */
@Injectable()
export class ImageSweeper {
  constructor(
    private readonly repo: MenusRepository,
    @Inject(IMAGE_STORAGE) private readonly storage: ImageStorage,
  ) {}

  /**
   * `verify`: also read every image file and compare its SHA-256 with the stored one. `force`:
   * sweep a folder of which the database names no file though it is not the database's folder
   * by the look of it (see anotherDatabasesFolder); a dry run is never refused, it says so.
   */
  async sweep(options: { minAgeMs: number; dryRun: boolean; verify?: boolean; force?: boolean; now?: Date }): Promise<SweepReport> {
    const folder = this.storage.folder;
    const files = (await folder.files()).filter((f) => f.kind !== 'other');
    const damaged = await this.damaged(folder, files, options.verify === true);
    // With images kept in the database, the folder of those stored before the switch, once it holds no files of the storage, is nothing to sweep.
    if (!(this.storage instanceof FileImageStorage) && files.length === 0 && damaged.length === 0) {
      return { folder: null, checked: 0, orphans: [], tooRecent: 0, removed: false, damaged };
    }
    // A transaction still open that may have written a file keeps every file younger than its
    // start (less the minimum age, for the clocks of the database and the folder): its row
    // comes with its commit, however long it has waited for a lock.
    const writer = await this.repo.oldestImageWriterStart();
    const images = files.filter((f) => f.kind === 'image');
    const named = await this.repo.storedImageKeys(images.map((f) => f.name));
    const unnamed = files.filter((f) => f.kind === 'temporary' || !named.has(f.name));
    // Now by the earlier of this process's clock and the folder's: a command run on a host whose
    // clock is ahead (an hour, of a minimum age of 60 minutes) took files of uploads still under
    // way for old enough, and removed them before their rows committed.
    // (`now`, given, stands for both.)
    const folderNow = options.now === undefined && unnamed.length > 0 ? await folder.now() : null;
    const now = options.now?.getTime() ?? Math.min(Date.now(), folderNow?.getTime() ?? Infinity);
    const before = Math.min(now, writer?.getTime() ?? Infinity) - options.minAgeMs;
    const orphans: StoredFile[] = unnamed.filter((f) => f.modifiedAt.getTime() <= before);
    // Judged by the image files it would remove: the young file of a first upload under way (its
    // row not committed yet) in a new deployment's folder is no sign of another database's.
    const imageOrphans = orphans.filter((f) => f.kind === 'image').length;
    // A dry run removes nothing: it lists what it finds and says why the sweep would be refused
    // (it is what an operator runs to see the damage, such as a restore that left files out).
    const doubt = options.force ? null : await this.anotherDatabasesFolder(folder.dir, imageOrphans, named.size, damaged);
    if (doubt !== null && !options.dryRun) throw new OperatorError(`${doubt} Nothing was removed; give --force to sweep the folder all the same.`);
    if (!options.dryRun) {
      // Asked again just before, with no writer mid-way on SQLite: an image committed since the first look keeps its file.
      await this.repo.withoutImageWriters(async () => {
        const namedNow = await this.repo.storedImageKeys(orphans.filter((f) => f.kind === 'image').map((f) => f.name));
        for (const file of orphans) if (!namedNow.has(file.name)) await folder.remove(file);
      });
    }
    return {
      folder: folder.dir,
      checked: files.length,
      orphans: orphans.map((f) => ({ name: f.name, bytes: f.bytes, modifiedAt: f.modifiedAt.toISOString() })),
      tooRecent: unnamed.length - orphans.length,
      removed: !options.dryRun,
      damaged,
      ...(doubt === null ? {} : { notThisDatabasesFolder: doubt }),
    };
  }

  /**
   * Why a sweep of the folder is refused, or null: it holds image files of which the database
   * names none, and the database keeps no image at all (a mistyped DATABASE_SCHEMA or DATA_DIR:
   * a new, empty one) or the files of its own images are not in the folder (IMAGE_STORAGE_DIR
   * naming another deployment's folder). Such a sweep removed every image file the service
   * serves, and its images answered 500 from then on, the command saying only what it removed.
   * The folder of a database whose images were all moved into it (IMAGE_STORAGE=database) is
   * swept as before.
   */
  private async anotherDatabasesFolder(dir: string, orphans: number, named: number, damaged: SweepReport['damaged']): Promise<string | null> {
    if (orphans === 0 || named > 0) return null;
    const missing = damaged.filter((d) => d.why === 'missing').length;
    const none = missing === 0 && (await this.repo.count()).images === 0;
    if (!none && missing === 0) return null;
    const why = none ? 'the database keeps no image at all' : `the files of ${missing} of its images are not in it`;
    return (
      `${dir} holds ${orphans} image files old enough to sweep, and the database names none of its files (${why}): it does not look like this database's image folder. ` +
      'Are DATABASE_SCHEMA (or DATA_DIR) and IMAGE_STORAGE_DIR those the service runs with?'
    );
  }

  /**
   * Images whose file is missing or not of the size stored (a restore that left files out, a
   * disk fault), or with `verify` not of the SHA-256 stored either: the service refuses to serve
   * them (a 500 naming the file). Those found are asked for again at the end: an image replaced
   * meanwhile (its file removed once the replacement committed) is no image any more, and one
   * committed since the folder was listed has its file when it is looked at.
   */
  private async damaged(folder: FileImageStorage, files: readonly StoredFile[], verify: boolean): Promise<SweepReport['damaged']> {
    const sizes = new Map(files.filter((f) => f.kind === 'image').map((f) => [f.name, f.bytes]));
    const suspects = (await this.repo.storedImageFiles()).filter((row) => verify || sizes.get(row.key) !== row.bytes);
    const damaged: SweepReport['damaged'] = [];
    for (const row of suspects.sort((a, b) => (a.key < b.key ? -1 : 1))) {
      const bytes = await folder.sizeOf(row.key);
      const found = { name: row.key, bytes, storedBytes: row.bytes };
      if (bytes === null) damaged.push({ ...found, why: 'missing' });
      else if (bytes !== row.bytes) damaged.push({ ...found, why: 'size' });
      else if (verify && !(await this.holds(folder, row))) damaged.push({ ...found, why: 'content' });
    }
    if (damaged.length === 0) return [];
    const named = await this.repo.storedImageKeys(damaged.map((d) => d.name));
    return damaged.filter((d) => named.has(d.name));
  }

  /** Whether an image's file holds what was stored, checked as the service checks it when it serves the image. */
  private holds(folder: FileImageStorage, row: { key: string; bytes: number; sha256: string }): Promise<boolean> {
    return folder.read({ data: null, storageKey: row.key, bytes: row.bytes, sha256: row.sha256 }).then(
      () => true,
      (error: unknown) => {
        if (error instanceof DamagedImageFile) return false;
        throw error;
      },
    );
  }
}

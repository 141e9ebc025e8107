import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClientsService } from '../clients/clients.service.js';
import type { AppConfig } from '../config/app-config.js';
import type { ImageStorage } from './image-storage.js';
import type { MenusRepository } from './menus.repository.js';
import { MenusImportService } from './menus-import.service.js';

const dir = mkdtempSync(join(tmpdir(), 'menus-import-'));

/** The service over a database of no menus, which takes whatever it is given to save. */
function importer(saved: unknown[][]): MenusImportService {
  const repo = {
    findMenu: () => Promise.resolve(null),
    saveMenus: (menus: unknown[]) => {
      saved.push(menus);
      return Promise.resolve();
    },
  } as unknown as MenusRepository;
  const clients = { requireClient: () => Promise.resolve({}) } as unknown as ClientsService;
  // Images kept in the database: no folder to look at before writing.
  return new MenusImportService(repo, clients, { MENUS_IMPORT_IMAGES_MB: 256 } as AppConfig, {} as ImageStorage);
}

describe('MenusImportService.importFile', () => {
  it('refuses a menu the file gives twice, and writes nothing of it', async () => {
    const path = join(dir, 'twice.ndjson');
    const menu = (id: number): string => JSON.stringify({ id, name: `Menu ${id}`, startDate: '2026-01-01' });
    writeFileSync(path, `${[menu(1), menu(2), menu(1), menu(3)].join('\n')}\n`);
    const saved: unknown[][] = [];
    const report = await importer(saved).importFile(1001, path);
    expect(report.imported).toBe(0);
    expect(report.rejected).toEqual([{ line: 3, errors: ['menu 1 appears more than once in the file.'] }]);
    expect(saved).toEqual([]);
  });

  it('tells the menus a long file gives twice in linear time', async () => {
    // 200,000 menus: a search of the menus read before each one took one to two minutes here.
    // The bound leaves room for a loaded machine (about 4 s idle, reading the file included).
    const path = join(dir, 'many.ndjson');
    writeFileSync(path, Array.from({ length: 200_000 }, (_, i) => `{"id":${i + 1},"name":"M","startDate":"2026-01-01"}\n`).join(''));
    const saved: unknown[][] = [];
    const started = Date.now();
    const report = await importer(saved).importFile(1001, path);
    expect(Date.now() - started).toBeLessThan(40_000);
    expect(report).toEqual({ file: path, imported: 200_000, rejected: [] });
    expect(saved[0]).toHaveLength(200_000);
  });
});

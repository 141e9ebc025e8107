import { openDataSource } from '../../src/database/migration-tools.js';
import { isolatedConfig } from '../helpers/test-config.js';

/** How the embedded database is opened: what it promises of a commit, and the room its log keeps. */
describe('the embedded SQLite database', () => {
  it('syncs every commit before it is answered, cuts the write-ahead log back to 16 MB, and reads 16 KB pages', async () => {
    const { config, drop } = isolatedConfig();
    const db = await openDataSource(config);
    try {
      // FULL is 2: in WAL mode NORMAL (1) syncs only at checkpoints, and a power loss undid answered writes.
      expect(await db.query('PRAGMA synchronous')).toEqual([{ synchronous: 2 }]);
      expect(await db.query('PRAGMA journal_size_limit')).toEqual([{ journal_size_limit: 16 * 1024 * 1024 }]);
      expect(await db.query('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      expect(await db.query('PRAGMA page_size')).toEqual([{ page_size: 16384 }]);
    } finally {
      await db.destroy();
      await drop();
    }
  });
});

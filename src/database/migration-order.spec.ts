import type { MigrationInterface } from 'typeorm';
import { SUPERSEDED_MIGRATIONS } from './migrations/earlier-form.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from './migrations/index.js';

/** The order TypeORM runs migrations in: by the timestamp that ends each class's name. */
function runOrder(migrations: readonly { name: string }[]): string[] {
  const stamp = (name: string): number => Number(/(\d{13})$/.exec(name)?.[1]);
  return [...migrations].sort((a, b) => stamp(a.name) - stamp(b.name)).map((m) => m.name.replace(/\d{13}$/, ''));
}

describe('the order of the PostgreSQL migrations', () => {
  it('announces the write sequence only after it is past the clock and follows every move of data_version', () => {
    // Run the other way round, the announcement's commit would open a window in which writers of
    // the release before announced small sequences, or none, while their replicas key pages by data_version.
    const order = runOrder(POSTGRES_MIGRATIONS);
    expect(order.indexOf('SequenceFollowsDataVersion')).toBeGreaterThan(-1);
    expect(order.indexOf('AnnounceWriteSequence')).toBeGreaterThan(order.indexOf('SequenceFollowsDataVersion'));
  });
});

/**
 * Every name a migration has been committed under, on either database: a database that ran one
 * keeps its row for good. A new migration's names are added here when it is committed; a
 * migration given another name keeps its earlier one here and in SUPERSEDED_MIGRATIONS.
 */
const COMMITTED_NAMES = [
  'Initial1795340615263', 'Initial1795340616002', 'SeedVisitTypes1795340700000',
  'AddClientDataVersion1795346320695', 'AddClientDataVersion1795346322192',
  'CoveringPageIndex1795350180093', 'CoveringPageIndex1795350182142',
  'AddChangeFeed1795380014383', 'AddChangeFeed1795380015824',
  'AddVisitDocuments1795390470740', 'AddVisitDocuments1795390471949',
  'AddWebhooks1795391395678', 'AddWebhooks1795391398789',
  'NotifyDataVersion1795410000000', 'DocumentsInline1795420000000',
  'AddVisitDepartures1795549817519', 'AddVisitDepartures1795549819651',
  'AddVisitDepartures1795553445418', 'AddVisitDepartures1795553446725',
  'RepairVisitDocuments1795603300000', 'RepairVisitDocuments1795603300001',
  'AnnounceWriteSequence1795700000000', 'AnnounceWriteSequence1795700000003',
  'SequenceFollowsDataVersion1795700000001', 'SequenceFollowsDataVersion1795700000002',
  'AddSigningKeySignsFrom1795800000000', 'AddSigningKeySignsFrom1795800000001',
  'AddCredentialPreviousSecret1795900000000', 'AddCredentialPreviousSecret1795900000001',
  'AddDishImageIndex1796000000000', 'AddDishImageIndex1796000000001',
  'AddDishMenuOrderIndex1796100000000', 'AddDishMenuOrderIndex1796100000001',
  'AddSettingChecks1796200000000', 'AddSettingChecks1796200000001',
  'EraseRetiredSigningKeys1796300000000', 'EraseRetiredSigningKeys1796300000001',
  'RecordSequenceBlocks1796400000000', 'RecordSequenceBlocks1796400000001',
];

describe('the names of the migrations', () => {
  const current = [...SQLITE_MIGRATIONS, ...POSTGRES_MIGRATIONS].map((m) => (new (m as new () => MigrationInterface)()).name!);

  it('are the names of their classes, which TypeORM orders them by', () => {
    expect(current).toEqual([...SQLITE_MIGRATIONS, ...POSTGRES_MIGRATIONS].map((m) => m.name));
  });

  it('include every name a migration was committed under, or name it as superseded: else a database that ran it is taken for a later release\'s', () => {
    const known = new Set([...current, ...SUPERSEDED_MIGRATIONS]);
    expect(COMMITTED_NAMES.filter((name) => !known.has(name))).toEqual([]);
    // And a new migration is added to the list, so that renaming it later is caught here.
    expect(current.filter((name) => !COMMITTED_NAMES.includes(name))).toEqual([]);
  });
});

import { POSTGRES_MIGRATIONS } from './migrations/index.js';

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

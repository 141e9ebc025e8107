import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { bigIntTransformer, timestampColumn } from '../../database/column-types.js';

/** A client organisation (restaurant or hospitality group), addressed as `SvcClientId`. */
@Entity('clients')
export class Client {
  @PrimaryColumn({ type: 'integer' })
  id!: number;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  /**
   * Moves on every change to the client's visits, branches, brands or name, so cached
   * visit pages of an older version are never served.
   */
  @Column({ name: 'data_version', type: 'integer', default: 0 })
  dataVersion!: number;

  /**
   * The last write sequence given to one of the client's visits. A writer increments it in
   * its transaction, which locks the client's row until commit: writers of one client take
   * their sequences one after another, in commit order.
   */
  @Column({ name: 'change_seq', type: 'bigint', default: 0, transformer: bigIntTransformer })
  changeSeq!: number;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;
}

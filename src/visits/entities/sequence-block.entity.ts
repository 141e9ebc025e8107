import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigIntTransformer } from '../../database/column-types.js';

/**
 * A block of a client's write sequence numbers that one move of its data version took, from
 * `firstSeq` to `lastSeq`: the numbers a write gave its visits (or, for a change of names, the
 * one it moved the sequence to). Written by the database's trigger on the client's row
 * (migration RecordSequenceBlocks), whoever writes; blocks more than 400 days before the
 * newest (the numbers follow the clock, in microseconds) are removed as new ones come.
 *
 * Since the sequence moves past the clock at every write, it has gaps between blocks that no
 * visit, departure or feed token was ever given. A change-feed token that names a number in
 * such a gap was given out by this database as it was before a restore from an earlier
 * backup: its changes after the backup are gone, and its partner's copy holds them still.
 *
 * No foreign key to the clients: a backup of a release before this table, restored with
 * `pg_restore --clean` to roll back, drops and makes the clients' table again, which a key of
 * a table the backup does not know would keep it from doing (its rows then stayed as the later
 * release left them). Clients are never deleted.
 */
@Entity('sequence_blocks')
export class SequenceBlock {
  @PrimaryColumn({ name: 'client_id', type: 'integer' })
  clientId!: number;

  @PrimaryColumn({ name: 'last_seq', type: 'bigint', transformer: bigIntTransformer })
  lastSeq!: number;

  @Column({ name: 'first_seq', type: 'bigint', transformer: bigIntTransformer })
  firstSeq!: number;
}

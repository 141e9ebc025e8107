import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { bigIntTransformer } from '../../database/column-types.js';
import { Client } from '../../clients/entities/client.entity.js';

/**
 * A visit that a write moved to another brand or visit type: where it was before and where the
 * write put it. A change feed filtered by brand or visit type (by the query, or by a
 * credential's entitlements) reports it as removed at this write when the write took it out of
 * the selection and it is still out (at its last such write only),
 * so that a partner's copy does not keep a visit it would never hear of again. Its write
 * sequence is the one the visit took at that write.
 */
// A feed finds a visit's later departures here (only its last one out of a selection is reported).
@Index('ix_visit_departures_visit', ['clientId', 'visitId', 'changeSeq'])
@Entity('visit_departures')
export class VisitDeparture {
  @PrimaryColumn({ name: 'client_id', type: 'integer' })
  clientId!: number;

  @ManyToOne(() => Client, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', foreignKeyConstraintName: 'fk_visit_departures_client' })
  client?: Client;

  @PrimaryColumn({ name: 'change_seq', type: 'bigint', transformer: bigIntTransformer })
  changeSeq!: number;

  @Column({ name: 'visit_id', type: 'bigint', transformer: bigIntTransformer })
  visitId!: number;

  /** The brand the visit had before the write (null: none). */
  @Column({ name: 'brand_id', type: 'integer', nullable: true })
  brandId!: number | null;

  /** The visit type it had before the write. */
  @Column({ name: 'visit_type', type: 'varchar', length: 2 })
  visitType!: string;

  /** The brand the write gave it (null: none). */
  @Column({ name: 'new_brand_id', type: 'integer', nullable: true })
  newBrandId!: number | null;

  /** The visit type the write gave it. */
  @Column({ name: 'new_visit_type', type: 'varchar', length: 2 })
  newVisitType!: string;
}

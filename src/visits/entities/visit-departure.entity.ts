import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { bigIntTransformer } from '../../database/column-types.js';
import { Client } from '../../clients/entities/client.entity.js';

/**
 * A visit that a write moved to another brand or visit type: where it was before. A change
 * feed filtered by brand or visit type (by the query, or by a credential's entitlements)
 * reports it as removed at this write, when it was in the selection before and is no longer,
 * so that a partner's copy does not keep a visit it would never hear of again. Its write
 * sequence is the one the visit took at that write.
 */
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
}

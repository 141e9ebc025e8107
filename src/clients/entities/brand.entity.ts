import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Client } from './client.entity.js';

/** A brand of a client, addressed as `SvcBrandId`. Brand ids are unique across clients. */
@Entity('brands')
export class Brand {
  @PrimaryColumn({ type: 'integer' })
  id!: number;

  @Index('ix_brands_client')
  @Column({ name: 'client_id', type: 'integer' })
  clientId!: number;

  @ManyToOne(() => Client, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', foreignKeyConstraintName: 'fk_brands_client' })
  client?: Client;

  @Column({ type: 'varchar', length: 200 })
  name!: string;
}

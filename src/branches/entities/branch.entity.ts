import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Brand } from '../../clients/entities/brand.entity.js';
import { Client } from '../../clients/entities/client.entity.js';

/** A branch (site) of a client: the service's id and the client's own branch code. */
@Entity('branches')
export class Branch {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Index('ix_branches_client')
  @Column({ name: 'client_id', type: 'integer' })
  clientId!: number;

  @ManyToOne(() => Client, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', foreignKeyConstraintName: 'fk_branches_client' })
  client?: Client;

  @Column({ name: 'brand_id', type: 'integer', nullable: true })
  brandId!: number | null;

  @ManyToOne(() => Brand, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'brand_id', foreignKeyConstraintName: 'fk_branches_brand' })
  brand?: Brand | null;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ name: 'branch_code', type: 'varchar', length: 100, nullable: true })
  branchCode!: string | null;
}

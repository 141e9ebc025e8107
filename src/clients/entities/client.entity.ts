import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';

/** A client organisation (restaurant or hospitality group), addressed as `SvcClientId`. */
@Entity('clients')
export class Client {
  @PrimaryColumn({ type: 'integer' })
  id!: number;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;
}

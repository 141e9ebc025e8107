import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Client } from '../../clients/entities/client.entity.js';

/** A menu of a client. Active while it has no end date or its end date is today or later. */
@Entity('menus')
@Index('ix_menus_client', ['clientId', 'id'])
export class Menu {
  @PrimaryColumn({ type: 'integer' })
  id!: number;

  @Column({ name: 'client_id', type: 'integer' })
  clientId!: number;

  @ManyToOne(() => Client, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', foreignKeyConstraintName: 'fk_menus_client' })
  client?: Client;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ name: 'start_date', type: 'varchar', length: 10 })
  startDate!: string;

  @Column({ name: 'end_date', type: 'varchar', length: 10, nullable: true })
  endDate!: string | null;
}

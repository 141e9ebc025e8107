import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';
import { Credential } from './credential.entity.js';

/** An API key (`svc-api-key`), stored as a keyed hash; the prefix is for display only. */
@Entity('api_keys')
export class ApiKey {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id!: number;

  @Index('uq_api_keys_prefix', { unique: true })
  @Column({ type: 'varchar', length: 20 })
  prefix!: string;

  @Index('uq_api_keys_hash', { unique: true })
  @Column({ type: 'varchar', length: 64 })
  hash!: string;

  @Index('ix_api_keys_credential')
  @Column({ name: 'credential_id', type: 'varchar', length: 64 })
  credentialId!: string;

  @ManyToOne(() => Credential, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'credential_id', foreignKeyConstraintName: 'fk_api_keys_credential' })
  credential?: Credential;

  @Column({ type: 'boolean', default: false })
  revoked!: boolean;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;
}

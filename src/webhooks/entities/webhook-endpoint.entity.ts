import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Credential } from '../../auth/entities/credential.entity.js';
import { timestampColumn } from '../../database/column-types.js';

/**
 * A URL that is told when the visits a credential may read change. The signing secret must
 * sign, so it is stored reversibly: encrypted (see webhook-secrets.ts), never in clear.
 */
@Entity('webhook_endpoints')
export class WebhookEndpoint {
  /** `wh_` and 16 hex digits: what operators type. */
  @PrimaryColumn({ type: 'varchar', length: 40 })
  id!: string;

  @Index('ix_webhook_endpoints_credential')
  @Column({ name: 'credential_id', type: 'varchar', length: 64 })
  credentialId!: string;

  @ManyToOne(() => Credential, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'credential_id', foreignKeyConstraintName: 'fk_webhook_endpoints_credential' })
  credential?: Credential;

  @Column({ type: 'varchar', length: 2048 })
  url!: string;

  /** Added with --allow-private: the URL may lead to a private or link-local address. */
  @Column({ name: 'allow_private', type: 'boolean', default: false })
  allowPrivate!: boolean;

  /** The signing secret, encrypted. */
  @Column({ type: 'text' })
  secret!: string;

  /** The secret before the last rotation, encrypted; it signs too until previousSecretUntil. */
  @Column({ name: 'previous_secret', type: 'text', nullable: true })
  previousSecret!: string | null;

  @Column({ name: 'previous_secret_until', ...timestampColumn, nullable: true })
  previousSecretUntil!: Date | null;

  /** Disabled by an operator: no events are written for it and none are sent. */
  @Column({ type: 'boolean', default: false })
  disabled!: boolean;

  /** Since when an event was given up after its retries; cleared by the next success. */
  @Column({ name: 'failing_since', ...timestampColumn, nullable: true })
  failingSince!: Date | null;

  /** The last delivery answered with a 2xx. */
  @Column({ name: 'last_delivery_at', ...timestampColumn, nullable: true })
  lastDeliveryAt!: Date | null;

  @Column({ name: 'last_error', type: 'varchar', length: 500, nullable: true })
  lastError!: string | null;

  @Column({ name: 'last_error_at', ...timestampColumn, nullable: true })
  lastErrorAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;
}

import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';

/**
 * An OAuth client (the `client_id` a partner authenticates with) and what it is
 * entitled to. Lists are stored as space- or comma-separated text; null brands or visit
 * types mean "all".
 */
@Entity('credentials')
export class Credential {
  @PrimaryColumn({ name: 'client_id', type: 'varchar', length: 64 })
  clientId!: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  name!: string | null;

  /** Keyed hash of the client secret, `hmac-sha256$<hex>`, or the older `scrypt$N$r$p$salt$hash` (see secrets.ts). */
  @Column({ name: 'secret_hash', type: 'varchar', length: 200 })
  secretHash!: string;

  /**
   * The secret's hash before its last rotation (`credentials rotate-secret --keep-old-hours`),
   * which authenticates too until `previousSecretUntil`; both null when there is none.
   */
  @Column({ name: 'previous_secret_hash', type: 'varchar', length: 200, nullable: true })
  previousSecretHash!: string | null;

  @Column({ name: 'previous_secret_until', ...timestampColumn, nullable: true })
  previousSecretUntil!: Date | null;

  /** Space-delimited scopes assigned. */
  @Column({ type: 'text' })
  scopes!: string;

  /** Comma-separated client ids (`SvcClientId`) the credential may read. */
  @Column({ name: 'client_ids', type: 'text' })
  clientIds!: string;

  /** Comma-separated brand ids, or null for all brands. */
  @Column({ name: 'brand_ids', type: 'text', nullable: true })
  brandIds!: string | null;

  /** Comma-separated visit type codes, or null for all visit types. */
  @Column({ name: 'visit_types', type: 'text', nullable: true })
  visitTypes!: string | null;

  @Column({ type: 'boolean', default: false })
  disabled!: boolean;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;
}

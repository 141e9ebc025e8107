import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';

/**
 * A token signing key pair. The newest active key signs; every key not retired verifies,
 * so tokens signed before a rotation keep working until their key is retired.
 */
@Entity('signing_keys')
export class SigningKey {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  kid!: string;

  @Column({ type: 'varchar', length: 10 })
  alg!: string;

  /** PKCS#8 PEM of the private key. */
  @Column({ name: 'private_key', type: 'text' })
  privateKey!: string;

  /** Public key as a JWK (JSON text). */
  @Column({ name: 'public_jwk', type: 'text' })
  publicJwk!: string;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;

  @Column({ name: 'retired_at', ...timestampColumn, nullable: true })
  retiredAt!: Date | null;
}

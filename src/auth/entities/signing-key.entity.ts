import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';

/**
 * A token signing key pair. Every key not retired is published and verifies, so tokens signed
 * before a rotation keep working until their key is retired; the active key whose `signsFrom`
 * came last (and is past) signs.
 */
@Entity('signing_keys')
export class SigningKey {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  kid!: string;

  @Column({ type: 'varchar', length: 10 })
  alg!: string;

  /**
   * The PKCS#8 PEM of the private key, sealed under a key derived from API_KEY_HASH_KEY
   * (`v1.<iv>.<tag>.<ciphertext>`); a PEM in clear in a key an earlier release stored; empty
   * once the key is retired (AuthRepository.retireSigningKey).
   */
  @Column({ name: 'private_key', type: 'text' })
  privateKey!: string;

  /** Public key as a JWK (JSON text). */
  @Column({ name: 'public_jwk', type: 'text' })
  publicJwk!: string;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;

  /**
   * When the key begins to sign: a rotation publishes a key first, so that verifiers that keep
   * the key set for its max-age know it before a token it signed reaches them. Null for keys
   * written before this column, which signed from their creation.
   */
  @Column({ name: 'signs_from', ...timestampColumn, nullable: true })
  signsFrom!: Date | null;

  @Column({ name: 'retired_at', ...timestampColumn, nullable: true })
  retiredAt!: Date | null;
}

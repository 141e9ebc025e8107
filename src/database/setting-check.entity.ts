import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A check of a setting the database's rows depend on, stored once by the service's start (see
 * src/database/setting-checks.ts): a process that writes such rows with another value compares
 * it first and refuses, where it wrote rows the service could not use or served wrongly.
 */
@Entity('setting_checks')
export class SettingCheck {
  /** The setting checked (`API_KEY_HASH_KEY`, `RESULTS_TIMEZONE`). */
  @PrimaryColumn({ type: 'varchar', length: 50 })
  name!: string;

  /** What stands for its value: for a secret, `hmac-sha256$<hex>` of a fixed label under it, which tells nothing of the value; else the value. */
  @Column({ type: 'varchar', length: 100 })
  value!: string;
}

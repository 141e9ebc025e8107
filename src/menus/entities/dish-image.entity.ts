import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import { binaryColumn, timestampColumn } from '../../database/column-types.js';

/**
 * A stored dish image. The bytes live in `data` with the database storage (the
 * default) or under the storage folder with `storage_key` naming the file.
 */
@Entity('dish_images')
export class DishImage {
  /** Random id; also the last segment of the image URL. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ name: 'content_type', type: 'varchar', length: 50 })
  contentType!: string;

  @Column({ type: 'integer' })
  bytes!: number;

  @Column({ type: 'integer' })
  width!: number;

  @Column({ type: 'integer' })
  height!: number;

  /** Hex SHA-256 of the stored bytes; the strong ETag. */
  @Column({ type: 'varchar', length: 64 })
  sha256!: string;

  @Column({ ...binaryColumn, nullable: true })
  data!: Buffer | null;

  @Column({ name: 'storage_key', type: 'varchar', length: 200, nullable: true })
  storageKey!: string | null;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;
}

import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  Unique,
  UpdateDateColumn,
} from 'typeorm';
import { timestampColumn } from '../../database/column-types.js';
import { DishImage } from './dish-image.entity.js';
import { Menu } from './menu.entity.js';

/** A dish on a menu; `code` is unique within its menu. */
@Entity('dishes')
@Unique('uq_dishes_menu_code', ['menuId', 'code'])
/** An image's dish, and so its client, is found by the image (GET /menus/dishes/images/{imageId}). */
@Index('ix_dishes_image', ['imageId'])
/** A menu's dishes in the order of its pages (GET /menus/dishes): see MenusRepository.dishes. */
@Index('ix_dishes_menu_order', ['menuId', 'order', 'id'])
export class Dish {
  @PrimaryGeneratedColumn({ type: 'integer' })
  id!: number;

  @Column({ name: 'menu_id', type: 'integer' })
  menuId!: number;

  @ManyToOne(() => Menu, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'menu_id', foreignKeyConstraintName: 'fk_dishes_menu' })
  menu?: Menu;

  @Column({ type: 'varchar', length: 50 })
  code!: string;

  @Column({ type: 'varchar', length: 250 })
  description!: string;

  @Column({ type: 'varchar', length: 50 })
  type!: string;

  @Column({ name: 'sort_order', type: 'integer', nullable: true })
  order!: number | null;

  @Column({ name: 'expiry_date', type: 'varchar', length: 10, nullable: true })
  expiryDate!: string | null;

  /** JSON array of strings. */
  @Column({ type: 'text', default: '[]' })
  keywords!: string;

  @Column({ name: 'image_id', type: 'varchar', length: 36, nullable: true })
  imageId!: string | null;

  @ManyToOne(() => DishImage, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'image_id', foreignKeyConstraintName: 'fk_dishes_image' })
  image?: DishImage | null;

  @CreateDateColumn({ name: 'created_at', ...timestampColumn })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', ...timestampColumn })
  updatedAt!: Date;
}

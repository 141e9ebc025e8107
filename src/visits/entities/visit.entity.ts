import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Branch } from '../../branches/entities/branch.entity.js';
import { Brand } from '../../clients/entities/brand.entity.js';
import { Client } from '../../clients/entities/client.entity.js';
import { bigIntTransformer, timestampColumn } from '../../database/column-types.js';
import { VisitType } from './visit-type.entity.js';

/**
 * One scored visit. The scalar fields are columns (the filter columns indexed); the
 * sections with their questions are kept as the JSON text that was imported, so the
 * read path passes it through without parsing it.
 *
 * Date-times are wall-clock strings `yyyy-mm-ddThh:mm:ss` with no zone, exactly as the
 * interface publishes them; they sort correctly as text on both databases.
 */
@Entity('visits')
// A page is found in this index alone: it holds the order (visitDateTime, id) and the filters
// (brand, visit type), so skipping to a deep page never reads the rows it skips.
@Index('ix_visits_client_time', ['clientId', 'visitDateTime', 'id', 'brandId', 'visitType'])
@Index('ix_visits_client_modified', ['clientId', 'modificationDate'])
// The change feed reads a client's visits in the order they were written, filters in the index.
@Index('ix_visits_client_change', ['clientId', 'changeSeq', 'brandId', 'visitType'])
// A feed's first call finds the first write at or after its 'Since' here.
@Index('ix_visits_client_changed_at', ['clientId', 'changedAt', 'changeSeq'])
export class Visit {
  @PrimaryColumn({ type: 'bigint', transformer: bigIntTransformer })
  id!: number;

  @Column({ name: 'client_id', type: 'integer' })
  clientId!: number;

  @ManyToOne(() => Client, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', foreignKeyConstraintName: 'fk_visits_client' })
  client?: Client;

  @Index('ix_visits_brand')
  @Column({ name: 'brand_id', type: 'integer', nullable: true })
  brandId!: number | null;

  @ManyToOne(() => Brand, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'brand_id', foreignKeyConstraintName: 'fk_visits_brand' })
  brand?: Brand | null;

  @Index('ix_visits_branch')
  @Column({ name: 'branch_id', type: 'varchar', length: 64 })
  branchId!: string;

  @ManyToOne(() => Branch, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'branch_id', foreignKeyConstraintName: 'fk_visits_branch' })
  branch?: Branch;

  @Index('ix_visits_type')
  @Column({ name: 'visit_type', type: 'varchar', length: 2 })
  visitType!: string;

  @ManyToOne(() => VisitType, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'visit_type', foreignKeyConstraintName: 'fk_visits_type' })
  type?: VisitType;

  @Column({ name: 'questionnaire_type', type: 'varchar', length: 100 })
  questionnaireType!: string;

  @Column({ name: 'visit_score', type: 'double precision' })
  visitScore!: number;

  @Column({ name: 'recommend_score', type: 'double precision', nullable: true })
  recommendScore!: number | null;

  @Column({ name: 'recommend_comment', type: 'text', nullable: true })
  recommendComment!: string | null;

  /** The visit's local date, `yyyy-mm-dd`: the first ten characters of visitDateTime. */
  @Column({ name: 'visit_date', type: 'varchar', length: 10 })
  visitDate!: string;

  @Column({ name: 'visit_date_time', type: 'varchar', length: 19 })
  visitDateTime!: string;

  @Column({ name: 'modification_date', type: 'varchar', length: 19 })
  modificationDate!: string;

  @Column({ name: 'visit_source', type: 'varchar', length: 100, nullable: true })
  visitSource!: string | null;

  /** The `sections` array as JSON text, stored as imported after validation. */
  @Column({ type: 'text' })
  sections!: string;

  /** Plus only: the guest's id (online feedback visits carry one). */
  @Column({ name: 'guest_id', type: 'varchar', length: 100, nullable: true })
  guestId!: string | null;

  /** Plus only: the guest's consent to be contacted by e-mail; null when not asked. */
  @Column({ name: 'opt_in_contact_by_email', type: 'boolean', nullable: true })
  optInContactByEmail!: boolean | null;

  /** Plus only: the guest's consent to marketing; null when not asked. */
  @Column({ name: 'opt_in_join_marketing', type: 'boolean', nullable: true })
  optInJoinMarketing!: boolean | null;

  /**
   * The client's write sequence at this visit's last insert or change: the change feed's
   * order. Taken from the client's counter in the writing transaction (see
   * VisitsRepository.upsertBatch), so sequences are in commit order per client.
   */
  @Column({ name: 'change_seq', type: 'bigint', default: 0, transformer: bigIntTransformer })
  changeSeq!: number;

  /** When the visit was last inserted or changed here (the server's clock): where a feed's 'Since' starts. */
  @Column({ name: 'changed_at', ...timestampColumn, nullable: true })
  changedAt!: Date | null;

  /** When the survey platform completed the visit; MV scores may change for 24 hours after. */
  @Column({ name: 'completed_at', ...timestampColumn, nullable: true })
  completedAt!: Date | null;
}

import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { bigIntTransformer, binaryColumn } from '../../database/column-types.js';
import { Visit } from './visit.entity.js';

/**
 * A visit's response JSON, rendered when the visit is written, so that reading a page is an
 * index range and a byte copy per visit: no parsing, no per-field encoding. Only the visit's
 * own fields are here; the names that follow the client, brand and branch (which can be
 * renamed without touching the visit) are written in front of them when a page is read.
 * Kept in a table of its own so that the rows a page reads hold only what it sends.
 */
@Entity('visit_documents')
export class VisitDocument {
  @PrimaryColumn({ name: 'visit_id', type: 'bigint', transformer: bigIntTransformer })
  visitId!: number;

  @OneToOne(() => Visit, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'visit_id', foreignKeyConstraintName: 'fk_visit_documents_visit' })
  visit?: Visit;

  /** The visit's branch: which names are written in front of the document. */
  @Column({ name: 'branch_id', type: 'varchar', length: 64 })
  branchId!: string;

  /** UTF-8 JSON from `,"visitType":` to the end of `"sections":[...]`, in the interface's field order. */
  @Column({ ...binaryColumn })
  standard!: Buffer;

  /** UTF-8 JSON of the plus fields: `,"guestId":...,"optIns":{...}`. */
  @Column({ ...binaryColumn })
  plus!: Buffer;
}

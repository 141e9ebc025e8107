import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A visit type code (`MV`, `OF`, `TA`, ...), managed by the operator. */
@Entity('visit_types')
export class VisitType {
  @PrimaryColumn({ type: 'varchar', length: 2 })
  code!: string;

  @Column({ type: 'varchar', length: 100 })
  name!: string;
}

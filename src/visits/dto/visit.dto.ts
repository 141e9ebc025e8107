import { ApiExtraModels, ApiProperty, getSchemaPath } from '@nestjs/swagger';

export class QuestionDto {
  @ApiProperty({ example: 'Was the steak cooked as ordered?' })
  subject!: string;

  @ApiProperty({ type: Number, format: 'double', nullable: true, example: 10, description: 'Null for free-text questions.' })
  score!: number | null;

  @ApiProperty({ type: String, nullable: true, example: 'FOOD_COOK' })
  analysisTag!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'Food' })
  category!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'Ribeye steak' })
  dish!: string | null;

  @ApiProperty({ type: String, nullable: true, example: 'Yes' })
  answer!: string | null;
}

export class SectionDto {
  @ApiProperty({ example: 'Food Quality' })
  name!: string;

  @ApiProperty({ type: Number, format: 'double', nullable: true, example: 92.5 })
  score!: number | null;

  @ApiProperty({ type: [QuestionDto] })
  questions!: QuestionDto[];
}

export class VisitDto {
  @ApiProperty({ type: 'integer', format: 'int64', example: 700000123 })
  visitId!: number;

  @ApiProperty({ type: 'integer', example: 1001 })
  clientId!: number;

  @ApiProperty({ example: 'Acme Dining Group' })
  clientName!: string;

  @ApiProperty({ type: String, nullable: true, example: 'Acme Grill' })
  brandName!: string | null;

  @ApiProperty({ example: 'BR-1001-0001', description: 'Matches `id` of a branch record.' })
  branchId!: string;

  @ApiProperty({ type: String, nullable: true, example: 'AG-LDS-01', description: 'Matches `branchCode` of a branch record.' })
  branchCode!: string | null;

  @ApiProperty({ example: 'Acme Grill Leeds Briggate' })
  branchName!: string;

  @ApiProperty({ example: 'MV', minLength: 2, maxLength: 2, description: 'MV mystery visit, OF online feedback, TA third-party review.' })
  visitType!: string;

  @ApiProperty({ example: 'Mystery Visit - Dinner' })
  questionnaireType!: string;

  @ApiProperty({ type: Number, format: 'double', example: 86.4, description: 'A percentage.' })
  visitScore!: number;

  @ApiProperty({ type: Number, format: 'double', nullable: true, example: 9 })
  recommendScore!: number | null;

  @ApiProperty({ type: String, nullable: true, example: 'Lovely evening, we will be back.' })
  recommendComment!: string | null;

  @ApiProperty({ example: '2026-11-01T19:30:00', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$', description: 'Local time of the visit, no offset.' })
  visitDateTime!: string;

  @ApiProperty({ example: '2026-11-02T08:00:00', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$', description: 'When the result last changed (MV scores may change for 24 hours).' })
  modificationDate!: string;

  @ApiProperty({ type: String, nullable: true, example: 'Mystery Guest' })
  visitSource!: string | null;

  @ApiProperty({ type: [SectionDto] })
  sections!: SectionDto[];
}

export class OptInsDto {
  @ApiProperty({ type: Boolean, nullable: true, description: 'Null when the guest was not asked.' })
  contactByEmail!: boolean | null;

  @ApiProperty({ type: Boolean, nullable: true })
  joinMarketing!: boolean | null;
}

/** What plus adds to a standard visit: the guest's id and opt-ins. */
export class PlusFieldsDto {
  @ApiProperty({ type: String, nullable: true, example: 'G-3fa85f64', description: 'Only online feedback (OF) visits carry one.' })
  guestId!: string | null;

  @ApiProperty({ type: OptInsDto })
  optIns!: OptInsDto;
}

class StandardVisitsData {
  @ApiProperty({ type: [VisitDto] })
  visits!: VisitDto[];
}

/** A plus visit: every standard field, and the plus fields. */
export type PlusVisitDto = VisitDto & PlusFieldsDto;

@ApiExtraModels(VisitDto, PlusFieldsDto)
class PlusVisitsData {
  @ApiProperty({
    type: 'array',
    description: 'Plus visits: the standard visit (VisitDto) extended by PlusFieldsDto.',
    items: { allOf: [{ $ref: getSchemaPath(VisitDto) }, { $ref: getSchemaPath(PlusFieldsDto) }] },
  })
  visits!: PlusVisitDto[];
}

export class StandardVisitsResponseDto {
  @ApiProperty({ type: StandardVisitsData })
  data!: StandardVisitsData;
}

export class PlusVisitsResponseDto {
  @ApiProperty({ type: PlusVisitsData })
  data!: PlusVisitsData;
}


/** Where the change feed goes on from: pass it back as `after`. */
export class ChangesPagingDto {
  @ApiProperty({
    description:
      'Token of the next page: present on every page, the last and an empty one included. Store it and pass it ' +
      'back as `after` to read the changes written since.',
    example: 'eyJzIjoiY2hhbmdlcy...IfQ.kq3v...',
  })
  after!: string;
}

/** A visit the query's selection no longer holds. */
export class RemovedVisitDto {
  @ApiProperty({ type: 'integer', format: 'int64', description: 'The id of a visit to drop from a copy kept of this selection.', example: 700000123 })
  visitId!: number;
}

const REMOVED =
  'Visits that a change moved out of this selection (to a brand or visit type outside `SvcBrandId`, `VisitTypes` ' +
  "or the credential's entitlements) since the token: drop them from a copy of it. Always empty for a selection " +
  'of every brand and visit type. A visit is never both here and in `visits` on one page; one moved back in is in ' +
  '`visits` again.';

class StandardChangesData extends StandardVisitsData {
  @ApiProperty({ type: [RemovedVisitDto], description: REMOVED })
  removed!: RemovedVisitDto[];
}

class PlusChangesData extends PlusVisitsData {
  @ApiProperty({ type: [RemovedVisitDto], description: REMOVED })
  removed!: RemovedVisitDto[];
}

export class StandardChangesResponseDto {
  @ApiProperty({ type: StandardChangesData })
  data!: StandardChangesData;

  @ApiProperty({ type: ChangesPagingDto })
  paging!: ChangesPagingDto;
}

export class PlusChangesResponseDto {
  @ApiProperty({ type: PlusChangesData })
  data!: PlusChangesData;

  @ApiProperty({ type: ChangesPagingDto })
  paging!: ChangesPagingDto;
}

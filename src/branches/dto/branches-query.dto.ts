import { SvcClientIdParam } from '../../common/query-fields.js';

export class BranchesQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;
}

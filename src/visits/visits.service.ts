import { Injectable } from '@nestjs/common';
import { addDays } from '../common/clock.js';
import type { VisitsQueryDto } from './dto/visits-query.dto.js';
import { visitsPageJson } from './visit-json.js';
import { VisitsRepository } from './visits.repository.js';

export type VisitsVariant = 'standard' | 'plus';

@Injectable()
export class VisitsService {
  constructor(private readonly repo: VisitsRepository) {}

  /** One page of a client's visits as the JSON body, in the order visitDateTime, visitId. */
  async page(query: VisitsQueryDto, variant: VisitsVariant): Promise<string> {
    const plus = variant === 'plus';
    const rows = await this.repo.page({
      clientId: query.SvcClientId,
      from: query.FromDate,
      until: addDays(query.ToDate, 1),
      brandId: query.SvcBrandId,
      visitTypes: query.visitTypeCodes,
      skip: query.Skip,
      take: query.Take,
      plus,
    });
    return visitsPageJson(rows, plus);
  }
}

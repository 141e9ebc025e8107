import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { EntitledQuery } from '../auth/entitlements.js';
import { RequiresScope } from '../auth/requires-scope.decorator.js';
import { Scope } from '../auth/scopes.js';
import { ApiDataErrors } from '../common/api-responses.js';
import { PlusVisitsResponseDto, StandardVisitsResponseDto } from './dto/visit.dto.js';
import { VisitsQueryDto } from './dto/visits-query.dto.js';
import { VisitsService } from './visits.service.js';

const PAGING =
  'Visits whose local date is from FromDate to ToDate inclusive, ordered by visitDateTime then visitId. ' +
  'Paging: when the page holds Take visits, more may exist; repeat with the same parameters and Skip + Take. ' +
  'MV visits may change for 24 hours after completion: re-request recent days (modificationDate shows a change).';

@ApiTags('visits')
@Controller('visits')
export class VisitsController {
  constructor(private readonly visits: VisitsService) {}

  @Get('standard')
  @RequiresScope(Scope.VisitsStandard)
  @Header('Content-Type', 'application/json; charset=utf-8')
  @ApiOperation({ operationId: 'getStandardVisits', summary: "A page of the client's scored visits.", description: PAGING })
  @ApiOkResponse({ type: StandardVisitsResponseDto })
  @ApiDataErrors()
  standard(@EntitledQuery() query: VisitsQueryDto): Promise<string> {
    return this.visits.page(query, 'standard');
  }

  @Get('plus')
  @RequiresScope(Scope.VisitsPlus)
  @Header('Content-Type', 'application/json; charset=utf-8')
  @ApiOperation({
    operationId: 'getPlusVisits',
    summary: "A page of the client's scored visits with the plus fields (guestId, optIns).",
    description: PAGING,
  })
  @ApiOkResponse({ type: PlusVisitsResponseDto })
  @ApiDataErrors()
  plus(@EntitledQuery() query: VisitsQueryDto): Promise<string> {
    return this.visits.page(query, 'plus');
  }
}

import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { EntitledQuery, selectionOf } from '../auth/entitlements.js';
import { RequiresScope } from '../auth/requires-scope.decorator.js';
import { Scope } from '../auth/scopes.js';
import { ApiDataErrors } from '../common/api-responses.js';
import { PlusVisitsResponseDto, StandardVisitsResponseDto } from './dto/visit.dto.js';
import { VisitsQueryDto } from './dto/visits-query.dto.js';
import { VisitsService, type VisitsPage } from './visits.service.js';

const PAGING =
  'Visits whose local date is from FromDate to ToDate inclusive, ordered by visitDateTime then visitId. ' +
  'Paging: when the page holds Take visits, more may exist; repeat with the same parameters and Skip + Take. ' +
  'MV visits may change for 24 hours after completion: re-request recent days (modificationDate shows a change).';

const ETAG = {
  ETag: { description: 'Validator of the page: send it as If-None-Match to get a 304 while the data is unchanged.', schema: { type: 'string' } },
};
const NOT_MODIFIED = { status: 304, description: 'Not modified: the If-None-Match ETag is current.' };

/** The page bytes as rendered, with a validator: a partner re-requesting unchanged data gets a 304. */
function send(req: Request, res: Response, page: VisitsPage): void {
  res.setHeader('ETag', page.etag);
  res.setHeader('Cache-Control', 'private, no-cache');
  if (req.headers['if-none-match'] === page.etag) {
    res.status(304).end();
    return;
  }
  res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(page.body);
}

@ApiTags('visits')
@Controller('visits')
export class VisitsController {
  constructor(private readonly visits: VisitsService) {}

  @Get('standard')
  @RequiresScope(Scope.VisitsStandard)
  @ApiOperation({ operationId: 'getStandardVisits', summary: "A page of the client's scored visits.", description: PAGING })
  @ApiOkResponse({ type: StandardVisitsResponseDto, headers: ETAG })
  @ApiResponse(NOT_MODIFIED)
  @ApiDataErrors()
  async standard(@EntitledQuery() query: VisitsQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    send(req, res, await this.visits.page(selectionOf(query), query, 'standard'));
  }

  @Get('plus')
  @RequiresScope(Scope.VisitsPlus)
  @ApiOperation({
    operationId: 'getPlusVisits',
    summary: "A page of the client's scored visits with the plus fields (guestId, optIns).",
    description: PAGING,
  })
  @ApiOkResponse({ type: PlusVisitsResponseDto, headers: ETAG })
  @ApiResponse(NOT_MODIFIED)
  @ApiDataErrors()
  async plus(@EntitledQuery() query: VisitsQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    send(req, res, await this.visits.page(selectionOf(query), query, 'plus'));
  }
}

import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { EntitledQuery, selectionOf } from '../auth/entitled-query.js';
import { RequiresScope } from '../auth/requires-scope.decorator.js';
import { Scope } from '../auth/scopes.js';
import { ApiConditionalResponses, ApiDataErrors, ApiExpectationFailed, ApiHeadersTooLarge } from '../common/api-responses.js';
import { sendBody } from '../common/compression.js';
import {
  PlusChangesResponseDto,
  PlusVisitsResponseDto,
  StandardChangesResponseDto,
  StandardVisitsResponseDto,
} from './dto/visit.dto.js';
import { AppConfig } from '../config/app-config.js';
import { ChangesQueryDto, changesTake, PlusChangesQueryDto } from './dto/changes-query.dto.js';
import { VisitsQueryDto } from './dto/visits-query.dto.js';
import { CompressedPages } from './compressed-pages.js';
import { sendVisitsPage } from './page-response.js';
import { PagesInFlight } from './pages-in-flight.js';
import { VisitChangesService, type ChangesPage } from './visit-changes.service.js';
import { VisitsService, type VisitsVariant } from './visits.service.js';

const PAGING =
  'Visits whose local date is from FromDate to ToDate inclusive, ordered by visitDateTime then visitId. ' +
  'Paging: when the page holds Take visits, more may exist; repeat with the same parameters and Skip + Take. ' +
  'MV visits may change for 24 hours after completion: re-request recent days (modificationDate shows a change).';

const ETAG = {
  ETag: { description: 'Validator of the page: send it as If-None-Match to get a 304 while the data is unchanged.', schema: { type: 'string' } },
};
const CHANGES =
  'The change feed: visits inserted or changed, in the order they were written, each once per page in its ' +
  'current state. The first call names where to start (`Since`); every page, the last and an empty one ' +
  'included, gives `paging.after`: store it and pass it as `after` to read on, now or tomorrow. An empty page ' +
  'means nothing changed since. No change is missed, however imports and reads interleave: every visit written ' +
  'after the point a token marks is on a later page. A token is bound to the client, the variant and the ' +
  'query\'s filters.';

const LINK = {
  Link: { description: 'The next page of the feed: `<...&after=TOKEN>; rel="next"`, the same token as `paging.after`.', schema: { type: 'string' } },
};

@ApiTags('visits')
@ApiHeadersTooLarge()
@ApiExpectationFailed()
@Controller('visits')
export class VisitsController {
  constructor(
    private readonly visits: VisitsService,
    private readonly changes: VisitChangesService,
    private readonly config: AppConfig,
    private readonly compressed: CompressedPages,
    private readonly inFlight: PagesInFlight,
  ) {}

  @Get('standard')
  @RequiresScope(Scope.VisitsStandard)
  @ApiOperation({ operationId: 'getStandardVisits', summary: "A page of the client's scored visits.", description: PAGING })
  @ApiOkResponse({ type: StandardVisitsResponseDto, headers: ETAG })
  @ApiConditionalResponses()
  @ApiDataErrors()
  async standard(@EntitledQuery() query: VisitsQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.sendPage(req, res, query, 'standard');
  }

  @Get('plus')
  @RequiresScope(Scope.VisitsPlus)
  @ApiOperation({
    operationId: 'getPlusVisits',
    summary: "A page of the client's scored visits with the plus fields (guestId, optIns).",
    description: PAGING,
  })
  @ApiOkResponse({ type: PlusVisitsResponseDto, headers: ETAG })
  @ApiConditionalResponses()
  @ApiDataErrors()
  async plus(@EntitledQuery() query: VisitsQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.sendPage(req, res, query, 'plus');
  }

  @Get('standard/changes')
  @RequiresScope(Scope.VisitsStandard)
  @ApiOperation({ operationId: 'getStandardVisitChanges', summary: "The client's visits as they change, by cursor.", description: CHANGES })
  @ApiOkResponse({ type: StandardChangesResponseDto, headers: LINK })
  @ApiDataErrors()
  async standardChanges(@EntitledQuery() query: ChangesQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.sendChanges(req, res, query, 'standard');
  }

  @Get('plus/changes')
  @RequiresScope(Scope.VisitsPlus)
  @ApiOperation({
    operationId: 'getPlusVisitChanges',
    summary: "The client's visits with the plus fields as they change, by cursor.",
    description: CHANGES,
  })
  @ApiOkResponse({ type: PlusChangesResponseDto, headers: LINK })
  @ApiDataErrors()
  async plusChanges(@EntitledQuery() query: PlusChangesQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.sendChanges(req, res, query, 'plus');
  }

  /** A page of visits, read once there is room for it among the page bodies in flight (PAGES_IN_FLIGHT_MB). */
  private sendPage(req: Request, res: Response, query: VisitsQueryDto, variant: VisitsVariant): Promise<void> {
    return this.inFlight.serve(
      res,
      query.Take,
      ownerOf(res),
      () => this.visits.page(selectionOf(query), query, variant),
      (page, sending) => sendVisitsPage(req, res, page, this.compressed, sending),
    );
  }

  /** A feed page is never cached (the next call with the same token may hold more), nor its compressed forms. */
  private sendChanges(req: Request, res: Response, query: ChangesQueryDto, variant: VisitsVariant): Promise<void> {
    const take = changesTake(query, this.config.VISITS_TAKE_MAX);
    return this.inFlight.serve(res, take, ownerOf(res), () => this.changes.page(query, variant, selectionOf(query)), (page, sending) =>
      this.writeChanges(req, res, query, variant, page, sending),
    );
  }

  private writeChanges(
    req: Request,
    res: Response,
    query: ChangesQueryDto,
    variant: VisitsVariant,
    page: ChangesPage,
    sending: (sent: Buffer) => void,
  ): Promise<void> {
    const next = new URLSearchParams({ SvcClientId: String(query.SvcClientId) });
    if (query.Take !== undefined) next.set('Take', String(query.Take));
    if (query.SvcBrandId !== undefined) next.set('SvcBrandId', String(query.SvcBrandId));
    if (query.VisitTypes !== undefined) next.set('VisitTypes', query.VisitTypes);
    next.set('after', page.after);
    res.setHeader('Link', `<${this.config.baseUrl}/visits/${variant}/changes?${next.toString()}>; rel="next"`);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).setHeader('Content-Type', 'application/json; charset=utf-8');
    return sendBody(req, res, page.body, { sending });
  }
}

/** The credential a page is written for (the bearer guard names it), whose share of the pages in flight it takes. */
function ownerOf(res: Response): string {
  return String(res.locals.clientId);
}

import { Controller, Get, Header, HttpCode, Param, Post, Req, Res, UseInterceptors } from '@nestjs/common';
import {
  ApiBody,
  ApiExtraModels,
  ApiConsumes,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { entitle, EntitledQuery, QueryWithRules, type QueryRules } from '../auth/entitled-query.js';
import type { AuthenticatedRequest } from '../auth/principal.js';
import { RequiresScope } from '../auth/requires-scope.decorator.js';
import { Scope } from '../auth/scopes.js';
import { answeredNotModified, writePrecondition } from '../common/conditional-get.js';
import { positionOf } from '../common/page-token-param.js';
import { ValidationProblem } from '../common/problem.js';
import { ApiConditionalResponses, ApiDataErrors, ApiExpectationFailed, ApiHeadersTooLarge, ApiProblemResponse } from '../common/api-responses.js';
import { AppConfig } from '../config/app-config.js';
import { DishUploadInterceptor, type UploadRequest } from './dish-upload.interceptor.js';
import { imageTooLargeMessage } from './image-inspector.js';
import { UPLOADS_BUSY_DETAIL } from './uploads-in-flight.js';
import { DishesPageDto, DishInputDto, DishResponseDto, DishUploadDto, MenusPageDto, type DishDto, type MenuDto } from './dto/menu.dto.js';
import { ClientQueryDto, DishesQueryDto, MenusQueryDto } from './dto/menus-query.dto.js';
import { MenusService, type Page } from './menus.service.js';

/** The header that carries the next page's address when there is one. */
const NEXT_PAGE_LINK = {
  Link: { required: false, description: 'Present when another page exists: `<...&after=TOKEN>; rel="next"`, the same token as `paging.after`.', schema: { type: 'string' } },
};

@ApiTags('menus')
@ApiHeadersTooLarge()
@ApiExpectationFailed()
@Controller('menus')
export class MenusController {
  constructor(
    private readonly menus: MenusService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @RequiresScope(Scope.Menus)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    operationId: 'listMenus',
    summary: "The client's active menus (no end date, or ending today or later), a page at a time.",
    description: 'When another page exists, `paging.after` and the `Link: <...>; rel="next"` header carry its token.',
  })
  @ApiOkResponse({ type: MenusPageDto, headers: NEXT_PAGE_LINK })
  @ApiDataErrors(["'SvcClientId' must not be empty."])
  async list(@EntitledQuery() query: MenusQueryDto, @Res({ passthrough: true }) res: Response): Promise<MenusPageDto> {
    const page = await this.menus.menus(query.SvcClientId, positionOf(query));
    return { data: { menus: page.items }, paging: this.paging(res, page, `/menus?SvcClientId=${query.SvcClientId}`) };
  }

  @Get('dishes')
  @RequiresScope(Scope.Menus)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    operationId: 'listDishes',
    summary: 'The dishes of one of the client menus, by display order then id, a page at a time.',
  })
  @ApiOkResponse({ type: DishesPageDto, headers: NEXT_PAGE_LINK })
  @ApiDataErrors(["'menuId' must not be empty."])
  async dishes(@EntitledQuery() query: DishesQueryDto, @Res({ passthrough: true }) res: Response): Promise<DishesPageDto> {
    const page = await this.menus.dishes(query.SvcClientId, query.menuId, positionOf(query));
    const next = `/menus/dishes?SvcClientId=${query.SvcClientId}&menuId=${query.menuId}`;
    return { data: { dishes: page.items }, paging: this.paging(res, page, next) };
  }

  @Post('dishes')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @RequiresScope(Scope.DishesWrite)
  @UseInterceptors(DishUploadInterceptor)
  @ApiOperation({
    operationId: 'upsertDish',
    summary: 'Add a dish with its image to a menu, or update the dish with the same code on that menu.',
    description:
      'multipart/form-data with the image (a file part with an empty name, or named `file`) and the dish as JSON ' +
      'in the part `json`. The image is judged by its bytes: JPEG, PNG or WebP, at most `IMAGE_MAX_BYTES` (5 MiB by default, ' +
      'the `x-max-bytes` of the image part) and `IMAGE_MAX_PIXELS` (40 megapixels by default). ' +
      'Metadata such as EXIF (with any location) is removed before the image is stored. ' +
      'The dish of that code on the menu is replaced whole, its image too: a field the `json` part leaves out is stored as null, not kept.',
  })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: DishUploadDto })
  @ApiExtraModels(DishInputDto)
  @ApiOkResponse({ type: DishResponseDto })
  @ApiProblemResponse(
    413,
    'The body is larger than the service accepts: the image is over its limit (5 MiB unless configured), or the form in all ' +
      'over that and 256 KiB more; `errors` names the limit. The connection closes after the response.',
    undefined,
    [imageTooLargeMessage(new AppConfig().IMAGE_MAX_BYTES)],
  )
  @ApiProblemResponse(
    415,
    'The body has a `Content-Encoding`: the multipart body is read as it is sent, so send it with none.',
    "The upload's Content-Encoding 'gzip' is not read: send the multipart body as it is, with no Content-Encoding.",
  )
  @ApiHeader({ name: 'If-None-Match', required: false, description: '`*`: add the dish only if the menu has none with its code (a 412 otherwise).', schema: { type: 'string', enum: ['*'] } })
  @ApiHeader({ name: 'If-Match', required: false, description: '`*`: replace the dish only if the menu has one with its code (a 412 otherwise). A dish has no entity tag: any other value is a 412.', schema: { type: 'string', enum: ['*'] } })
  @ApiProblemResponse(
    412,
    'If-None-Match: * and the menu has a dish with the code, or If-Match: * and it has none (or If-Match names entity tags, which a dish has not). Nothing is written.',
    "If-None-Match: * asks for a new dish, and menu 101 has one with code 'PH-03': send no If-None-Match to replace it.",
  )
  @ApiDataErrors(
    ["'code' must be at most 50 characters.", "The image part is required: a file part with an empty name or named 'file'."],
    'Temporarily unavailable; retry after `Retry-After` seconds: the database cannot be reached; or the upload bodies being received ' +
      'already take `UPLOADS_IN_FLIGHT_MB` (64 MiB per process by default, each counted by its declared length, or as the largest form ' +
      'when it declares none), or half of it for one credential: the body is not read and the connection closes (`Retry-After: 5`); ' +
      `or 40 MiB of images already wait to be checked, or half of that for its credential (\`Retry-After: 5\`); or storage cannot be written (\`Retry-After: 60\`). Busy with uploads, the detail is '${UPLOADS_BUSY_DETAIL}'`,
  )
  async upload(@QueryWithRules(ClientQueryDto) rules: QueryRules<ClientQueryDto>, @Req() req: UploadRequest & AuthenticatedRequest): Promise<DishResponseDto> {
    // The query's rules and the form's are one request's: every broken one in one 400, before the entitlements.
    // An image waiting for the decoder is not checked once its connection has closed.
    // The credential takes its turn among the others' images waiting for the decoder.
    const form = await this.menus.readForm(req.uploadParts, req.uploadErrors, () => req.socket.destroyed, req.principal?.clientId);
    const errors = [...rules.errors, ...form.errors];
    if (errors.length > 0 || !rules.query) throw new ValidationProblem(errors);
    const query = entitle(rules.query, req.principal);
    // Preconditions are weighed once the request would otherwise succeed (RFC 9110 §13.2.1), the existing dish under the write's lock.
    return { data: { dish: await this.menus.upload(query.SvcClientId, form, () => writePrecondition(req.headers, 'a dish')) } };
  }

  @Get('dishes/images/:imageId')
  @RequiresScope(Scope.Menus)
  @ApiOperation({ operationId: 'getDishImage', summary: 'The image of a dish, as stored (the `image.url` of a dish record).' })
  @ApiParam({
    name: 'imageId',
    description: 'The id in the `image.url` of a dish record; any other id is a 404.',
    schema: { type: 'string', format: 'uuid', minLength: 36, maxLength: 36, pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' },
  })
  @ApiProduces('image/jpeg', 'image/png', 'image/webp')
  @ApiOkResponse({
    description: 'The image bytes.',
    schema: { type: 'string', format: 'binary' },
    headers: {
      ETag: { description: "Strong validator: the image's SHA-256; send it as If-None-Match to get a 304.", schema: { type: 'string' } },
      'Cache-Control': { description: '`private, max-age=31536000, immutable`: an image id never names other bytes.', schema: { type: 'string' } },
      Vary: { description: '`Authorization, svc-api-key`: a cached image is for the credentials that fetched it.', schema: { type: 'string' } },
    },
  })
  @ApiConditionalResponses()
  @ApiProblemResponse(404, 'No image has this id.', 'No image has this id.')
  @ApiDataErrors(["'SvcClientId' must not be empty."])
  async image(
    @EntitledQuery() query: ClientQueryDto,
    @Param('imageId') imageId: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const image = await this.menus.image(query.SvcClientId, imageId);
    // Only the image is cached for a year: a refusal (400, 403, 404) must not outlive its cause.
    // Kept for the credentials that fetched it: a browser asked with others (or none) asks the service.
    res.setHeader('Cache-Control', 'private, max-age=31536000, immutable');
    res.vary('Authorization').vary('svc-api-key');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (answeredNotModified(req, res, image.etag)) return;
    res.type(image.contentType).send(image.data);
  }

  private paging<T extends MenuDto | DishDto>(res: Response, page: Page<T>, path: string): { after?: string } {
    if (!page.after) return {};
    res.setHeader('Link', `<${this.config.baseUrl}${path}&after=${encodeURIComponent(page.after)}>; rel="next"`);
    return { after: page.after };
  }
}

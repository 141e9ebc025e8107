import { IntegerParam, SvcClientIdParam, ID_MAX } from '../../common/query-fields.js';
import { isPositionNumber, isQueryId, PageTokenParam } from '../../common/page-token-param.js';

const AFTER = 'The page token from `paging.after` of the previous page (or the `Link: rel="next"` header).';

export class MenusQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;

  /** Holds the id of the last menu of the page before. */
  @PageTokenParam<MenusQueryDto>(AFTER, {
    scope: (q) => (isQueryId(q.SvcClientId) ? menusScope(q.SvcClientId) : undefined),
    position: (p) => p.length === 1 && isPositionNumber(p[0]),
  })
  after?: string;
}

export class DishesQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;

  @IntegerParam('menuId', {
    required: true,
    minimum: 1,
    minimumText: "greater than '0'",
    maximum: ID_MAX,
    description: 'A menu id as returned by GET /menus.',
    example: 101,
  })
  menuId!: number;

  /** Holds the display order and id of the last dish of the page before. */
  @PageTokenParam<DishesQueryDto>(AFTER, {
    scope: (q) => (isQueryId(q.SvcClientId) && isQueryId(q.menuId) ? dishesScope(q.SvcClientId, q.menuId) : undefined),
    position: (p) => p.length === 2 && p.every((n) => Number.isSafeInteger(n)),
  })
  after?: string;
}

export class ClientQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;
}

/** The query a menus page token is bound to. */
export function menusScope(clientId: number): string {
  return `menus:${clientId}`;
}

/** The query a dishes page token is bound to. */
export function dishesScope(clientId: number, menuId: number): string {
  return `dishes:${clientId}:${menuId}`;
}

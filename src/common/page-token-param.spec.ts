import { isPositionNumber, isQueryId, PageTokenParam, positionOf } from './page-token-param.js';
import { PageTokens } from './page-token.js';
import { ValidationProblem } from './problem.js';
import { IntegerParam, SvcClientIdParam } from './query-fields.js';
import { parseQuery, type DtoClass } from './query-params.js';
import { queryContext, TEST_PAGE_TOKENS } from '../../test/helpers/query-context.js';

const tokens = TEST_PAGE_TOKENS;
const context = queryContext();

/** A query paged by (order, id), bound to its client and list, as the dishes are. */
class ListQuery {
  @SvcClientIdParam()
  SvcClientId!: number;

  @IntegerParam('listId', { required: true, minimum: 1, minimumText: "greater than '0'", maximum: 2_147_483_647, description: 'A list.' })
  listId!: number;

  @PageTokenParam<ListQuery>('The token of the page before.', {
    scope: (q) => (isQueryId(q.SvcClientId) && isQueryId(q.listId) ? `${q instanceof ArchivedListQuery ? 'archived' : 'lists'}:${q.SvcClientId}:${q.listId}` : undefined),
    position: (p) => p.length === 2 && p.every(isPositionNumber),
  })
  after?: string;
}

/** The same parameters on another endpoint: a subclass binds its tokens to itself. */
class ArchivedListQuery extends ListQuery {}

function parse<T extends object>(dto: DtoClass<T>, query: Record<string, string>): T | string[] {
  try {
    return parseQuery(dto, new URLSearchParams(query).toString(), context);
  } catch (error) {
    if (error instanceof ValidationProblem) return error.errors ?? [];
    throw error;
  }
}

const INVALID = ["'after' is not a valid page token."];
const ANOTHER = ["'after' is a page token of another query."];

describe('the after parameter (a page token)', () => {
  it('gives the query the position of a token of that very query', () => {
    const query = parse(ListQuery, { SvcClientId: '1001', listId: '7', after: tokens.encode('lists:1001:7', [3, 12]) });
    expect(positionOf(query as object)).toEqual([3, 12]);
    expect(positionOf(parse(ListQuery, { SvcClientId: '1001', listId: '7' }) as object)).toBeUndefined();
    expect(positionOf(parse(ListQuery, { SvcClientId: '1001', listId: '7', after: '' }) as object)).toBeUndefined();
  });

  it('keeps the position when the same query string is read again (a valid query is reused)', () => {
    const query = { SvcClientId: '1001', listId: '7', after: tokens.encode('archived:1001:7', [0, 77]) };
    expect(positionOf(parse(ArchivedListQuery, query) as object)).toEqual([0, 77]);
    expect(positionOf(parse(ArchivedListQuery, query) as object)).toEqual([0, 77]);
  });

  it('refuses a token of another query: another client, list or endpoint', () => {
    const token = tokens.encode('lists:1001:7', [3, 12]);
    expect(parse(ListQuery, { SvcClientId: '1002', listId: '7', after: token })).toEqual(ANOTHER);
    expect(parse(ListQuery, { SvcClientId: '1001', listId: '8', after: token })).toEqual(ANOTHER);
    expect(parse(ArchivedListQuery, { SvcClientId: '1001', listId: '7', after: token })).toEqual(ANOTHER);
    // Of another query, whatever its position holds.
    expect(parse(ListQuery, { SvcClientId: '1001', listId: '7', after: tokens.encode('menus:1001', [5]) })).toEqual(ANOTHER);
  });

  it('refuses a token that is no token of this key, or a position the query cannot go on from', () => {
    for (const position of [[], [1], [1, 2, 3], [1, -1], [1.5, 2], ['1', 2]]) {
      expect(parse(ListQuery, { SvcClientId: '1001', listId: '7', after: tokens.encode('lists:1001:7', position as number[]) })).toEqual(INVALID);
    }
    for (const after of [new PageTokens('another key').encode('lists:1001:7', [1, 2]), 'garbage', 'a.b', 'x'.repeat(3000)]) {
      expect(parse(ListQuery, { SvcClientId: '1001', listId: '7', after })).toEqual(INVALID);
    }
  });

  it('is reported with every other broken rule, and not matched against a broken parameter', () => {
    expect(parse(ListQuery, { SvcClientId: 'abc', listId: '0', after: 'garbage' })).toEqual([
      "'SvcClientId' must be an integer: 'abc'.",
      "'listId' must be greater than '0'.",
      "'after' is not a valid page token.",
    ]);
    // A token cannot be of another query than one whose client is no id: only the id's rule is broken.
    expect(parse(ListQuery, { SvcClientId: '0', listId: '7', after: tokens.encode('lists:1001:7', [1, 2]) })).toEqual(["'SvcClientId' must be greater than '0'."]);
  });
});

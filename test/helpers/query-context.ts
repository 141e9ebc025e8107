import { PageTokens } from '../../src/common/page-token.js';
import type { QueryContext } from '../../src/common/query-params.js';

/** A key of the tests for page tokens: tokens made with it are taken by `queryContext()`'s rules. */
export const TEST_PAGE_TOKENS = new PageTokens('a page-token key of the tests');

/** The settings query rules read, fixed for tests: today is 2026-12-01 (noon UTC), the default limits. */
export function queryContext(overrides: Partial<QueryContext> = {}): QueryContext {
  return {
    today: () => '2026-12-01',
    takeMax: 1000,
    maxRangeDays: 31,
    zone: 'UTC',
    changesRetentionDays: 90,
    now: () => new Date('2026-12-01T12:00:00Z'),
    pageTokens: TEST_PAGE_TOKENS,
    ...overrides,
  };
}

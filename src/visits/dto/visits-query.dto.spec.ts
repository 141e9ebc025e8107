import { ValidationProblem } from '../../common/problem.js';
import { parseQuery } from '../../common/query-params.js';
import { queryContext } from '../../../test/helpers/query-context.js';
import { VisitsQueryDto } from './visits-query.dto.js';

const errorsOf = (query: string, maxRangeDays: number): string[] => {
  try {
    parseQuery(VisitsQueryDto, query, queryContext({ maxRangeDays }));
    return [];
  } catch (error) {
    if (error instanceof ValidationProblem) return error.errors ?? [];
    throw error;
  }
};

describe('the largest FromDate–ToDate range', () => {
  it('counts both dates and names the maximum, one day in the singular', () => {
    expect(errorsOf('SvcClientId=1001&Skip=0&Take=10&FromDate=2026-11-01&ToDate=2026-11-01', 1)).toEqual([]);
    expect(errorsOf('SvcClientId=1001&Skip=0&Take=10&FromDate=2026-11-01&ToDate=2026-11-02', 1)).toEqual(["The range from 'FromDate' to 'ToDate' must not exceed 1 day."]);
    expect(errorsOf('SvcClientId=1001&Skip=0&Take=10&FromDate=2026-11-01&ToDate=2026-11-07', 7)).toEqual([]);
    expect(errorsOf('SvcClientId=1001&Skip=0&Take=10&FromDate=2026-11-01&ToDate=2026-11-08', 7)).toEqual(["The range from 'FromDate' to 'ToDate' must not exceed 7 days."]);
  });
});

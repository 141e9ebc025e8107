import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsOptional, Matches, Min } from 'class-validator';
import { ProblemException } from './problem.js';
import { parseQuery } from './query-params.js';

const toInt = ({ value }: { value: unknown }): unknown =>
  typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value === '' ? undefined : value;

class SampleQuery {
  @Transform(toInt)
  @IsDefined({ message: "'SvcClientId' must not be empty." })
  @IsInt({ message: (a) => `'SvcClientId' must be an integer: '${String(a.value)}'.` })
  @Min(1, { message: "'SvcClientId' must be greater than '0'." })
  SvcClientId!: number;

  @IsOptional()
  @Matches(/^[A-Za-z]{2}$/, { message: (a) => `'VisitTypes' must be 2 alpha characters: '${String(a.value)}'.` })
  VisitTypes?: string;

  @IsOptional()
  @Matches(/^\d+$/, { message: (a) => `'Take' must be digits: '${String(a.value)}'.` })
  Take?: string;
}

function errorsOf(query: string): string[] {
  try {
    parseQuery(SampleQuery, query);
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemException);
    expect((error as ProblemException).getStatus()).toBe(400);
    return (error as ProblemException).errors ?? [];
  }
  throw new Error('expected a 400');
}

describe('parseQuery', () => {
  it('matches parameter names case-insensitively', () => {
    expect(parseQuery(SampleQuery, 'svcclientid=7&VISITTYPES=MV')).toEqual({ SvcClientId: 7, VisitTypes: 'MV' });
    expect(parseQuery(SampleQuery, 'SvcClientId=8')).toEqual({ SvcClientId: 8 });
  });

  it('folds the case of ASCII letters alone: a name that Unicode folds into a parameter is unknown', () => {
    // U+212A (Kelvin sign) lower-cases to ASCII 'k' by Unicode's rules.
    expect(parseQuery(SampleQuery, 'SvcClientId=8&Ta%E2%84%AAe=abc')).toEqual({ SvcClientId: 8 });
    expect(parseQuery(SampleQuery, 'SvcClientId=8&Take=5&TA%E2%84%AAE=6')).toEqual({ SvcClientId: 8, Take: '5' });
    expect(parseQuery(SampleQuery, 'SvcClientId=8&Ta%E2%84%AAe[]=5')).toEqual({ SvcClientId: 8 });
    expect(errorsOf('SvcClientId=8&TAKE=x')).toEqual(["'Take' must be digits: 'x'."]);
  });

  it('ignores unknown parameters', () => {
    expect(parseQuery(SampleQuery, 'SvcClientId=8&debug=1&utm_source=x')).toEqual({ SvcClientId: 8 });
  });

  it('refuses a parameter written as an array, which would otherwise be ignored as unknown and its filter lost', () => {
    const message = (key: string, name: string) => `'${key}' is written as an array, which no parameter is: send '${name}' once (a list as one comma-separated value).`;
    expect(errorsOf('SvcClientId=1&VisitTypes[]=MV&VisitTypes[]=OF')).toEqual([message('VisitTypes[]', 'VisitTypes')]);
    expect(errorsOf('visittypes%5B0%5D=MV&SvcClientId=1')).toEqual([message('visittypes[0]', 'VisitTypes')]);
    // Its own message alone, not also "must not be empty"; the other parameters' rules beside it.
    expect(errorsOf('SvcClientId[]=1001&VisitTypes=M1')).toEqual([message('SvcClientId[]', 'SvcClientId'), "'VisitTypes' must be 2 alpha characters: 'M1'."]);
    expect(errorsOf('SvcClientId=1&VisitTypes[%1B31m]=MV')).toEqual([message('VisitTypes[?31m]', 'VisitTypes')]);
    // Nested, long or unclosed brackets: whatever follows the first '[', the parameter was meant.
    expect(errorsOf('SvcClientId=1&VisitTypes[0][0]=ZZ')).toEqual([message('VisitTypes[0][0]', 'VisitTypes')]);
    expect(errorsOf('SvcClientId=1&VisitTypes[][]=ZZ')).toEqual([message('VisitTypes[][]', 'VisitTypes')]);
    expect(errorsOf('SvcClientId=1&VisitTypes[aaaaaaaaaaaaaaaaaaaaa]=MV')).toEqual([message('VisitTypes[aaaaaaaaaaaaaaaaaaaaa]', 'VisitTypes')]);
    expect(errorsOf('SvcClientId=1&VisitTypes[=MV')).toEqual([message('VisitTypes[', 'VisitTypes')]);
    expect(errorsOf('SvcClientId=1&VisitTypes[a]b=MV')).toEqual([message('VisitTypes[a]b', 'VisitTypes')]);
    // Brackets after a name that is no parameter's are an unknown parameter, as ever.
    expect(parseQuery(SampleQuery, 'SvcClientId=8&filter[brand]=5&filter[VisitTypes]=MV')).toEqual({ SvcClientId: 8 });
  });

  it('refuses a parameter given twice, whatever the case of its name', () => {
    expect(errorsOf('SvcClientId=1&svcclientid=2')).toEqual(["'SvcClientId' must be given only once."]);
  });

  it('reports every violated rule at once, in declaration order', () => {
    expect(errorsOf('VisitTypes=MV1&SvcClientId=abc')).toEqual([
      "'SvcClientId' must be an integer: 'abc'.",
      "'VisitTypes' must be 2 alpha characters: 'MV1'.",
    ]);
  });

  it('reports a missing or empty required parameter as empty', () => {
    expect(errorsOf('')).toEqual(["'SvcClientId' must not be empty."]);
    expect(errorsOf('SvcClientId=')).toEqual(["'SvcClientId' must not be empty."]);
  });

  it('reports only the first broken rule of a parameter', () => {
    expect(errorsOf('SvcClientId=0')).toEqual(["'SvcClientId' must be greater than '0'."]);
  });

  it('decodes percent-encoding and plus signs', () => {
    expect(errorsOf('SvcClientId=1&VisitTypes=M%2CV')).toEqual(["'VisitTypes' must be 2 alpha characters: 'M,V'."]);
  });

  it('refuses percent-escapes whose bytes are no UTF-8 rather than quote what they decode to (U+FFFD)', () => {
    expect(errorsOf('SvcClientId=%E0%A4%A&VisitTypes=%FF%FE')).toEqual([
      "'SvcClientId' holds percent-escapes whose bytes are not UTF-8.",
      "'VisitTypes' holds percent-escapes whose bytes are not UTF-8.",
    ]);
    expect(errorsOf('SvcClientId=1&VisitTypes=%C0%AF&visittypes=MV')).toEqual(["'VisitTypes' holds percent-escapes whose bytes are not UTF-8.", "'VisitTypes' must be given only once."]);
    // U+FFFD sent as such is a character like another; unknown parameters are not read at all.
    expect(errorsOf('SvcClientId=1&VisitTypes=%EF%BF%BD')).toEqual(["'VisitTypes' must be 2 alpha characters: '\uFFFD'."]);
    expect(parseQuery(SampleQuery, 'SvcClientId=3&utm=%FF')).toEqual({ SvcClientId: 3 });
    // Each value's own bytes tell, whatever another pair holds.
    expect(errorsOf('SvcClientId=1&Take=%C0%AF&x=%EF%BF%BD')).toEqual(["'Take' holds percent-escapes whose bytes are not UTF-8."]);
    expect(errorsOf('SvcClientId=%EF%BF%BD&VisitTypes=%FF')).toEqual(["'VisitTypes' holds percent-escapes whose bytes are not UTF-8.", "'SvcClientId' must be an integer: '\uFFFD'."]);
    expect(errorsOf('SvcClientId=1&VisitTypes=%EF%BF%BD%FF')).toEqual(["'VisitTypes' holds percent-escapes whose bytes are not UTF-8."]);
    // A lone '%' stays as sent; a byte-order mark is a character of the value, not dropped.
    expect(errorsOf('SvcClientId=1&VisitTypes=%EF%BF%BD%')).toEqual(["'VisitTypes' must be 2 alpha characters: '\uFFFD%'."]);
    expect(errorsOf('SvcClientId=1&VisitTypes=%EF%BB%BFMV')).toEqual(["'VisitTypes' must be 2 alpha characters: '\uFEFFMV'."]);
  });
});

import fc from 'fast-check';
import { keptExactly, parseRecordJson, UnkeptNumber, unkeptNumbers } from './json-numbers.js';
import { RecordReader } from './record-reader.js';
import { propertyRuns } from '../../test/helpers/property-runs.js';

describe('numbers a double cannot keep as written', () => {
  it('tells the numbers JSON.parse reads as another value from those it reads exactly', () => {
    for (const text of ['0', '-0', '1', '1.0', '1e2', '100E-2', '70.1', '0.1', '-12.5', '9007199254740991', '1.7976931348623157e308', '5e-324', '0.000001', '1234567890123.45e-3']) {
      expect([text, keptExactly(text)]).toEqual([text, true]);
    }
    for (const text of ['100.99999999999999999', '0.99999999999999999', '9007199254740993', '1e400', '-1e400', '1e-400', '70.12345678901234567', '1.0000000000000001', '123456789012345678e-3']) {
      expect([text, keptExactly(text)]).toEqual([text, false]);
    }
  });

  it('reads a number of a million digits in linear time, a run of zeros inside it too', () => {
    // Trimming the zeros with /0+$/ took time quadratic in the run: about 5 minutes for this
    // one, 3 s for a run of 65,000 (a dish's json part). Linear, it is a few milliseconds.
    const text = `1${'0'.repeat(1_000_000)}5`;
    const started = performance.now();
    expect(keptExactly(text)).toBe(false);
    expect(new UnkeptNumber(text).integral).toBe(true);
    expect(new UnkeptNumber(`${text}.5`).integral).toBe(false);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('keeps every number whose shortest text is written, and a double read from any text is kept when written as JavaScript prints it', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (d) => {
        expect(keptExactly(JSON.stringify(d))).toBe(true);
      }),
      propertyRuns(2000),
    );
  });

  it('finds each such number by where it stands, at any depth, and nothing inside strings', () => {
    const text = '{"menuId": 100.99999999999999999, "a": [1, {"b": 1e400}, "9007199254740993"], "c\\"d": {"e": 1e-400}, "f": 2}';
    expect(unkeptNumbers(text)).toEqual([
      { path: ['menuId'], text: '100.99999999999999999' },
      { path: ['a', 1, 'b'], text: '1e400' },
      { path: ['c"d', 'e'], text: '1e-400' },
    ]);
    expect(unkeptNumbers('[1, 2, 3]')).toEqual([]);
    expect(unkeptNumbers('1e400')).toEqual([{ path: [], text: '1e400' }]);
    // An exponent of a million digits is told by its size: it is not read as a number.
    const huge = `1e${'9'.repeat(1_000_000)}`;
    expect(unkeptNumbers(`[${huge}, 1e-${'9'.repeat(1_000_000)}, 0e${'9'.repeat(1_000_000)}]`).map((n) => n.text.length)).toEqual([huge.length, huge.length + 1]);
    expect(new UnkeptNumber(huge).integral).toBe(true);
    expect(new UnkeptNumber(`1e-${'9'.repeat(1_000_000)}`).integral).toBe(false);
  });

  it('parses as JSON.parse does, but leaves those numbers as they were written', () => {
    expect(parseRecordJson('{"a": 1.5, "b": [true, null, "x"]}')).toEqual({ a: 1.5, b: [true, null, 'x'] });
    const value = parseRecordJson('{"menuId": 100.99999999999999999, "dishes": [{"order": 1e400}], "__proto__": {"x": 1e-400}}') as Record<string, unknown>;
    expect(value.menuId).toEqual(new UnkeptNumber('100.99999999999999999'));
    expect((value.dishes as Record<string, unknown>[])[0].order).toEqual(new UnkeptNumber('1e400'));
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ x: new UnkeptNumber('1e-400') });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect(parseRecordJson('-1e400')).toEqual(new UnkeptNumber('-1e400'));
    expect(() => parseRecordJson('{"a": 01}')).toThrow(SyntaxError);
  });

  it('takes time in proportion to the text, however deep the numbers it leaves stand', () => {
    // 20,000 brackets around 10,000 numbers no double keeps: a copy of the path per number, each walked from the root, took over a minute.
    const text = `${'['.repeat(20_000)}${Array(10_000).fill('1e999').join(',')}${']'.repeat(20_000)}`;
    const started = Date.now();
    let value = parseRecordJson(text);
    expect(Date.now() - started).toBeLessThan(10_000);
    for (let depth = 0; depth < 19_999; depth++) value = (value as unknown[])[0];
    expect(value).toEqual(Array(10_000).fill(new UnkeptNumber('1e999')));
  });
});

describe('the record reader on numbers it cannot keep', () => {
  const read = (json: string, how: (r: RecordReader) => unknown): unknown[] => {
    const r = new RecordReader(parseRecordJson(json));
    return [how(r), r.errors];
  };

  it('refuses an integer field given a number that only rounds to a whole one, naming it as written', () => {
    expect(read('{"menuId": 100.99999999999999999}', (r) => r.id('menuId'))).toEqual([null, ["'menuId' must be an integer: '100.99999999999999999'."]]);
    expect(read('{"order": 1e-400}', (r) => r.int('order'))).toEqual([null, ["'order' must be an integer: '1e-400'."]]);
    expect(read('{"order": 1.0000000000000001}', (r) => r.int('order'))).toEqual([null, ["'order' must be an integer: '1.0000000000000001'."]]);
  });

  it('says the bound a whole number beyond any double breaks', () => {
    expect(read('{"order": 1e400}', (r) => r.int('order', { min: -5, max: 5 }))).toEqual([null, ["'order' must be less than or equal to '5'."]]);
    expect(read('{"order": -1e400}', (r) => r.int('order', { min: -5, max: 5 }))).toEqual([null, ["'order' must be greater than or equal to '-5'."]]);
    expect(read('{"visitId": 9007199254740993}', (r) => r.int('visitId', { min: 1 }))).toEqual([null, ["'visitId' must be an integer from 1 to 9007199254740991: '9007199254740993'."]]);
  });

  it('keeps whole numbers written with a fraction or an exponent, in JSON and in CSV alike', () => {
    expect(read('{"order": 1.0, "menuId": 1e2}', (r) => [r.int('order'), r.id('menuId')])).toEqual([[1, 100], []]);
    const csv = new RecordReader({ visitId: '71.0', brandId: ' 12 ', order: '1e3' }, { textValues: true });
    expect([csv.int('visitId'), csv.id('brandId'), csv.int('order')]).toEqual([71, 12, 1000]);
    const inexact = new RecordReader({ visitId: '100.99999999999999999', order: '1.5' }, { textValues: true });
    expect([inexact.int('visitId'), inexact.int('order')]).toEqual([null, null]);
    expect(inexact.errors).toEqual(["'visitId' must be an integer: '100.99999999999999999'.", "'order' must be an integer: '1.5'."]);
  });

  it('refuses a decimal field given more digits than it keeps, saying what it would have stored', () => {
    expect(read('{"score": 70.99999999999999999}', (r) => r.number('score'))).toEqual([null, ["'score' has more digits than the service keeps: '70.99999999999999999' would be stored as '71'."]]);
    expect(read('{"score": 1e-400}', (r) => r.number('score'))).toEqual([null, ["'score' has more digits than the service keeps: '1e-400' would be stored as '0'."]]);
    expect(read('{"score": 1e400}', (r) => r.number('score', { min: 0, max: 100 }))).toEqual([null, ["'score' must be between '0' and '100'."]]);
    expect(read('{"score": 70.125}', (r) => r.number('score'))).toEqual([70.125, []]);
    const csv = new RecordReader({ score: '70.99999999999999999' }, { textValues: true });
    expect([csv.number('score'), csv.errors]).toEqual([null, ["'score' has more digits than the service keeps: '70.99999999999999999' would be stored as '71'."]]);
  });

  it('does not read such a number as an object, a string or a list', () => {
    const r = new RecordReader(parseRecordJson('{"optIns": 1e400, "code": 1e400, "keywords": 1e400}'));
    expect(r.nested(r.raw('optIns'), 'optIns.').errors).toEqual(["'optIns' must be a JSON object."]);
    expect([r.string('code'), r.array('keywords')]).toEqual([null, null]);
    expect(r.errors).toEqual(["'code' must be a string.", "'keywords' must be an array."]);
  });
});

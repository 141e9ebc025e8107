import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnkeptNumber } from './json-numbers.js';
import { MAX_LINE_BYTES, readAllRecords, RecordFileError } from './record-file.js';

const dir = mkdtempSync(join(tmpdir(), 'records-'));
function file(name: string, text: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('readAllRecords', () => {
  it('reads a JSON array and reports the line each element starts on', async () => {
    const path = file('a.json', '[\n  {"id": 1},\n  {\n    "id": "x,]"\n  },\n  3\n]\n');
    expect(await readAllRecords(path)).toEqual([
      { line: 2, element: 1, value: { id: 1 } },
      { line: 3, element: 2, value: { id: 'x,]' } },
      { line: 6, element: 3, value: 3 },
    ]);
  });

  it('refuses a record that names a key twice by its place, in a JSON array or NDJSON, and reads the others', async () => {
    const array = file('twice.json', '[\n  {"id": 1, "b": {"x": 1}},\n  {"id": 2, "id": 3},\n  {"id": 4, "c": [{"y": 1, "y": 2}]}, {"id": 5, "\\u0069d": 6}\n, {"id": 7}]');
    expect(await readAllRecords(array)).toEqual([
      { line: 2, element: 1, value: { id: 1, b: { x: 1 } } },
      { line: 3, element: 2, error: "the record names 'id' more than once" },
      { line: 4, element: 3, error: "the record names 'y' more than once" },
      { line: 4, element: 4, error: "the record names 'id' more than once" },
      { line: 5, element: 5, value: { id: 7 } },
    ]);
    const single = file('twice-one.json', '{"id": 1, "id": 2}');
    expect(await readAllRecords(single)).toEqual([{ line: 1, error: "the record names 'id' more than once" }]);
    const lines = file('twice.ndjson', '{"id":1}\n{"id":2,"id":3}\n{"id":4}\n');
    expect(await readAllRecords(lines)).toEqual([
      { line: 1, value: { id: 1 } },
      { line: 2, error: "the record names 'id' more than once" },
      { line: 3, value: { id: 4 } },
    ]);
  });

  it('leaves a number a double cannot keep as it was written, in a JSON array or NDJSON, for the record to be refused by', async () => {
    const array = file('unkept.json', '[{"visitId": 100.99999999999999999}, {"visitId": 101.5}, 1e400]');
    expect(await readAllRecords(array)).toEqual([
      { line: 1, element: 1, value: { visitId: new UnkeptNumber('100.99999999999999999') } },
      { line: 1, element: 2, value: { visitId: 101.5 } },
      { line: 1, element: 3, value: new UnkeptNumber('1e400') },
    ]);
    const lines = file('unkept.ndjson', '{"visitId":9007199254740993,"s":[{"score":1e-400}]}\n{"visitId":7}\n');
    expect(await readAllRecords(lines)).toEqual([
      { line: 1, value: { visitId: new UnkeptNumber('9007199254740993'), s: [{ score: new UnkeptNumber('1e-400') }] } },
      { line: 2, value: { visitId: 7 } },
    ]);
  });

  it('refuses a JSON array file over 32 MiB before reading it, as one the heap could not parse', async () => {
    const path = file('big.json', '[');
    truncateSync(path, 32 * 1024 * 1024 + 1);
    await expect(readAllRecords(path)).rejects.toThrow(
      new RecordFileError(`${path} is ${32 * 1024 * 1024 + 1} bytes: a JSON array file is read whole, up to ${32 * 1024 * 1024} bytes; send a larger one as NDJSON (a record per line).`),
    );
  });

  it('refuses a JSON file that does not parse, naming the file', async () => {
    const path = file('bad.json', '[{"id": 1},');
    await expect(readAllRecords(path)).rejects.toThrow(RecordFileError);
  });

  it('reads NDJSON line by line, reporting a malformed line without losing the others', async () => {
    const path = file('v.ndjson', '{"id":1}\n\n{"id":\n{"id":3}\n');
    const records = await readAllRecords(path);
    expect(records[0]).toEqual({ line: 1, value: { id: 1 } });
    expect(records[1]).toMatchObject({ line: 3, error: expect.stringMatching(/^not valid JSON/) });
    expect(records[2]).toEqual({ line: 4, value: { id: 3 } });
  });

  it('refuses a line longer than MAX_LINE_BYTES by its number, without holding it, and reads the lines after it', async () => {
    const long = `{"id":2,"comment":"${'x'.repeat(MAX_LINE_BYTES + 10)}"}`;
    const path = file('long.ndjson', `{"id":1}\r\n${long}\r\n{"id":3}\n${'y'.repeat(MAX_LINE_BYTES + 1)}`);
    expect(await readAllRecords(path)).toEqual([
      { line: 1, value: { id: 1 } },
      { line: 2, error: `the line is ${Buffer.byteLength(long) + 1} bytes long: at most ${MAX_LINE_BYTES} bytes are read` },
      { line: 3, value: { id: 3 } },
      { line: 4, error: `the line is ${MAX_LINE_BYTES + 1} bytes long: at most ${MAX_LINE_BYTES} bytes are read` },
    ]);
    // Exactly at the limit, a line is read.
    const atLimit = `{"id":5,"c":"${'z'.repeat(MAX_LINE_BYTES - 15)}"}`;
    expect(Buffer.byteLength(atLimit)).toBe(MAX_LINE_BYTES);
    expect((await readAllRecords(file('limit.ndjson', `${atLimit}\n`)))[0]).toMatchObject({ line: 1, value: { id: 5 } });
  });

  it('gives a CSV record the line it starts on (as a JSON array element), CRLF line ends and cells over several lines alike', async () => {
    const crlf = file('multi-crlf.csv', 'id,name\r\nB-20,"A\r\nx"\r\n\r\nB-21,B\r\nB-22,"q\r\n\r\nw"\r\nB-23,z\r\n');
    const lf = file('multi-lf.csv', 'id,name\nB-20,"A\nx"\n\nB-21,B\nB-22,"q\n\nw"\nB-23,z\n');
    for (const path of [crlf, lf]) {
      expect((await readAllRecords(path)).map((r) => [r.line, 'value' in r ? (r.value as { id: string }).id : r.error])).toEqual([
        [2, 'B-20'],
        [5, 'B-21'],
        [6, 'B-22'],
        [9, 'B-23'],
      ]);
    }
  });

  it('refuses a CSV record of the wrong number of cells by its line, and reads every record around it', async () => {
    const rows = ['id,name', ...Array.from({ length: 3000 }, (_, i) => (i === 1500 ? `B${i},bad,EXTRA` : `B${i},${'n'.repeat(40)}`))];
    const records = await readAllRecords(file('cells.csv', `${rows.join('\n')}\n`));
    expect(records).toHaveLength(3000);
    expect(records.filter((r) => r.error !== undefined)).toEqual([{ line: 1502, error: 'not valid CSV: the record has 3 cells, the header names 2 columns' }]);
    expect(records.map((r) => r.line)).toEqual(Array.from({ length: 3000 }, (_, i) => i + 2));
    expect(records[1501]).toEqual({ line: 1503, value: { id: 'B1501', name: 'n'.repeat(40) }, text: true });
    const small = await readAllRecords(file('cells-small.csv', 'id,name\nA,a\nB,b,EXTRA\r\nC,"c\r\nd"\nD\nE,e\n'));
    expect(small.map((r) => [r.line, r.error ?? (r.value as { id: string }).id])).toEqual([
      [2, 'A'],
      [3, 'not valid CSV: the record has 3 cells, the header names 2 columns'],
      [4, 'C'],
      [6, 'not valid CSV: the record has 1 cell, the header names 2 columns'],
      [7, 'E'],
    ]);
  });

  it('takes CRLF and LF as line ends in any mix: no CR is left in a cell, no two rows are joined', async () => {
    const lf = await readAllRecords(file('mixed-lf.csv', 'id,branchCode\nA,A1\nB,B1\r\nC,C1\n'));
    const crlf = await readAllRecords(file('mixed-crlf.csv', 'id,branchCode\r\nA,A1\r\nB,B1\nC,C1\r\n'));
    for (const records of [lf, crlf]) {
      expect(records).toEqual([
        { line: 2, value: { id: 'A', branchCode: 'A1' }, text: true },
        { line: 3, value: { id: 'B', branchCode: 'B1' }, text: true },
        { line: 4, value: { id: 'C', branchCode: 'C1' }, text: true },
      ]);
    }
  });

  it('refuses a CSV file whole when a record breaks its structure (a quote, a record over the limit): what follows cannot be told apart', async () => {
    for (const [name, text, line] of [
      ['quote.csv', 'id,name\nA,a\nB,"b"x\nC,c\n', 2],
      ['open.csv', 'id,name\r\nA,"a\r\nb"\r\nB,"b\r\nC,c\r\n', 3],
      ['huge.csv', `id,name\nA,a\nB,b,c\nB,${'x'.repeat(MAX_LINE_BYTES + 1)}\nC,c\n`, 3],
    ] as const) {
      const path = file(name, text);
      await expect(readAllRecords(path)).rejects.toThrow(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: the record after line ${line} is not valid CSV \\(.+\\); the records after it cannot be told apart, so the file is refused whole and nothing of it was written\\.$`));
    }
  });

  it('reads NDJSON in a .json file whatever the length of its first record, and one object written over lines as one record', async () => {
    const long = `{"id":1,"comment":"${'x'.repeat(70_000)}","s":[{"a":"}\\"\\n{"}]}`;
    expect((await readAllRecords(file('long-first.json', `${long}\r\n{"id":2}\n`))).map((r) => [r.line, (r as { value: { id: number } }).value.id])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(await readAllRecords(file('one.json', `{\n  "id": 3,\n  "s": [{"a": 1}\n  ]\n}\n`))).toEqual([{ line: 1, value: { id: 3, s: [{ a: 1 }] } }]);
  });

  it('sniffs NDJSON in a file without the extension', async () => {
    const path = file('v.txt', '{"id":1}\n{"id":2}\n');
    expect((await readAllRecords(path)).map((r) => r.line)).toEqual([1, 2]);
  });

  it('reads CSV with a header row (names trimmed, cells kept as written), with line numbers; an empty cell is a field not given', async () => {
    const path = file('b.csv', 'id, name ,branchCode\nB1, Leeds ,\tLDS\u00a0\n"B2","York, North",\nB3,,""\n');
    expect(await readAllRecords(path)).toEqual([
      { line: 2, value: { id: 'B1', name: ' Leeds ', branchCode: '\tLDS\u00a0' }, text: true },
      { line: 3, value: { id: 'B2', name: 'York, North' }, text: true },
      { line: 4, value: { id: 'B3' }, text: true },
    ]);
  });

  it('refuses bytes that are no UTF-8: a JSON or CSV file as a whole, an NDJSON line by its number', async () => {
    const latin1 = (text: string) => Buffer.from(text, 'latin1');
    await expect(readAllRecords(file('bad.json', latin1('[{"id": "caf\u00e9"}]')))).rejects.toThrow(/bad\.json is not UTF-8 text/);
    await expect(readAllRecords(file('bad.csv', latin1('id,name\nU2,caf\u00e9\n')))).rejects.toThrow(/bad\.csv is not UTF-8 text/);
    // A lone surrogate written as CESU-8 bytes is no UTF-8 either.
    const lines = Buffer.concat([Buffer.from('{"id": "A"}\r\n{"id": "'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}\n{"id": "\u00e9"}')]);
    expect(await readAllRecords(file('bad.ndjson', lines))).toEqual([
      { line: 1, value: { id: 'A' } },
      { line: 2, error: 'the line is not UTF-8 text (bytes that are no UTF-8 would be stored as U+FFFD, not as given)' },
      { line: 3, value: { id: '\u00e9' } },
    ]);
  });

  it('reads a JSON or NDJSON file that starts with a byte order mark', async () => {
    const json = file('bom.json', '\uFEFF[{"id": "B1"}]');
    expect(await readAllRecords(json)).toEqual([{ line: 1, element: 1, value: { id: 'B1' } }]);
    const ndjson = file('bom.ndjson', '\uFEFF{"id": "B1"}\n{"id": "B2"}\n');
    expect(await readAllRecords(ndjson)).toEqual([
      { line: 1, value: { id: 'B1' } },
      { line: 2, value: { id: 'B2' } },
    ]);
  });

  it('refuses a CSV file whose header names none of the columns the import knows, or that has no header; other names are the records\' to judge', async () => {
    const columns = ['id', 'name', 'branchCode', 'brandId'];
    const wrong = file('wrong.csv', 'ID,Name,Code\nB1,Leeds,LDS\n');
    await expect(readAllRecords(wrong, { columns })).rejects.toEqual(
      new RecordFileError(`${wrong}: the CSV header names none of the columns ('ID', 'Name', 'Code'); its first row must name the columns, of id, name, branchCode, brandId.`),
    );
    const headless = file('headless.csv', 'BR-3001-0023,No header,N1,301\n');
    await expect(readAllRecords(headless, { columns })).rejects.toThrow(/the CSV header names none of the columns \('BR-3001-0023', 'No header', 'N1', '301'\)/);
    const cr = file('cr.csv', 'id,name,branchCode,brandId\rR-5,a,x,5\rR-6,b,x,5\r');
    await expect(readAllRecords(cr, { columns })).rejects.toEqual(new RecordFileError(`${cr}: its lines end in CR alone; save it with LF or CRLF line ends.`));
    // A column of another name, or of a field's name in another case, is read as JSON's would be.
    expect(await readAllRecords(file('extra.csv', 'id,Name,branchCode,region\nB1,Leeds,LDS,North\n'), { columns })).toEqual([
      { line: 2, value: { id: 'B1', Name: 'Leeds', branchCode: 'LDS', region: 'North' }, text: true },
    ]);
    expect(await readAllRecords(file('some.csv', 'name,id\nLeeds,B1\n'), { columns })).toEqual([{ line: 2, value: { name: 'Leeds', id: 'B1' }, text: true }]);
    const twice = file('twice.csv', 'id, id,name\nB1,B2,Leeds\n');
    await expect(readAllRecords(twice, { columns })).rejects.toEqual(new RecordFileError(`${twice}: the CSV header names a column more than once ('id').`));
    // No row at all (nothing, a BOM, blank lines): no header either, not a file of no records.
    for (const [name, text] of [['empty.csv', ''], ['bom.csv', '\uFEFF'], ['blank.csv', '\n\r\n\n']]) {
      const path = file(name, text);
      await expect(readAllRecords(path, { columns })).rejects.toEqual(
        new RecordFileError(`${path}: the file has no rows, not even a header; its first row must name the columns, of id, name, branchCode, brandId.`),
      );
    }
    // A header and no record is a file of no records.
    expect(await readAllRecords(file('header-only.csv', 'id,name\n'), { columns })).toEqual([]);
  });

  it('says each record of long series of the wrong number of cells, in order, and reads the records between and after them', async () => {
    // Said by their place in the list of problems, which is emptied once all are said (shifted
    // off one by one, each shift moved every problem after it: 250,000 in a row took 30 s).
    const series = 10_000;
    const bad = file('bad-cells.csv', `id,name\n${'x\n'.repeat(series)}B1,Leeds\n${'y,z,w\n'.repeat(series)}B2,York\n`);
    const records = await readAllRecords(bad);
    expect(records).toHaveLength(2 * series + 2);
    const wrong = (line: number, cells: number) => ({ line, error: `not valid CSV: the record has ${cells === 1 ? '1 cell' : `${cells} cells`}, the header names 2 columns` });
    expect(records.slice(0, series)).toEqual(Array.from({ length: series }, (_, i) => wrong(i + 2, 1)));
    expect(records[series]).toEqual({ line: series + 2, value: { id: 'B1', name: 'Leeds' }, text: true });
    expect(records.slice(series + 1, 2 * series + 1)).toEqual(Array.from({ length: series }, (_, i) => wrong(series + 3 + i, 3)));
    expect(records[2 * series + 1]).toEqual({ line: 2 * series + 3, value: { id: 'B2', name: 'York' }, text: true });
  });

  it('finds the columns a long header names twice in linear time', async () => {
    // 300,000 columns: a search of the names before each one took over a minute (about 1 s
    // now, idle; the bound leaves room for a loaded machine).
    const names = Array.from({ length: 300_000 }, (_, i) => `c${i}`);
    const wide = file('wide.csv', `${[...names, 'c7', 'c3', 'c7'].join(',')}\n`);
    const started = Date.now();
    await expect(readAllRecords(wide)).rejects.toEqual(new RecordFileError(`${wide}: the CSV header names a column more than once ('c7', 'c3').`));
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('says in one line that a file does not exist or is no file', async () => {
    await expect(readAllRecords(join(dir, 'missing.ndjson'))).rejects.toEqual(new RecordFileError(`${join(dir, 'missing.ndjson')} does not exist.`));
    await expect(readAllRecords(dir)).rejects.toEqual(new RecordFileError(`${dir} is not a file.`));
  });
});

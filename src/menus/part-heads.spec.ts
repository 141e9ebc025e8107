import { parameterNames } from '../common/media-parameters.js';
import { boundaryOf, partHeadWatcher, PartHeadWatcher } from './part-heads.js';

/** What the watcher says of a body fed in chunks of `size` bytes (every size must give the same). */
function watch(body: string, size: number, boundary = 'B'): string | undefined {
  const watcher = new PartHeadWatcher(boundary);
  const bytes = Buffer.from(body, 'latin1');
  for (let at = 0; at < bytes.length; at += size) {
    const reason = watcher.feed(bytes.subarray(at, at + size));
    if (reason !== undefined) return reason;
  }
  return undefined;
}

const part = (head: string, body = 'x') => `--B\r\n${head}\r\n\r\n${body}\r\n`;
const CHUNKS = [1, 2, 3, 7, 1000];

describe('PartHeadWatcher', () => {
  it.each([
    ['an image part and a json part', `${part('Content-Disposition: form-data; name=""; filename="a.png"\r\nContent-Type: image/png', '\r\n--Bx')}${part('Content-Disposition: form-data; name="json"\r\nContent-Type: application/json; charset=utf-8', '{}')}--B--\r\n`],
    ['a preamble and an epilogue', `preamble\r\n${part('Content-Disposition: form-data; name="json"')}--B--\r\nContent-Type: a\r\nContent-Type: b\r\n`],
    ['a part without headers', `${part('', 'x')}--B--\r\n`],
    ['a body that holds header lines', `${part('Content-Disposition: form-data; name="json"', 'Content-Type: a\r\n\r\nContent-Type: b')}--B--\r\n`],
    ['a quoted filename holding ; name=', `${part('Content-Disposition: form-data; name="f"; filename="a; name=b.png"')}--B--\r\n`],
    ['one header in each of two parts', `${part('Content-Type: a')}${part('Content-Type: b')}--B--\r\n`],
    ['a parameter given once on a folded line', `${part('Content-Disposition: form-data;\r\n name="json"\r\nContent-Type: application/json')}--B--\r\n`],
  ])('passes %s, whatever the chunks', (_what, body) => {
    for (const size of CHUNKS) expect([size, watch(body, size)]).toEqual([size, undefined]);
  });

  it.each([
    ['Content-Disposition twice', part('Content-Disposition: form-data; name="json"\r\ncontent-disposition: form-data; name="x"'), 'A part of the form has its Content-Disposition header more than once: send each part header once.'],
    ['Content-Type twice', part('Content-Disposition: form-data; name="json"\r\nContent-Type: text/plain; charset=utf-16le\r\nContent-Type: text/plain'), 'A part of the form has its Content-Type header more than once: send each part header once.'],
    ['a name given twice', part('Content-Disposition: form-data; name="json"; NAME="x"'), "A part of the form names its Content-Disposition parameter 'name' more than once: send each once."],
    ['a charset given twice', part('Content-Type: text/plain; charset=utf-8; charset="utf-16le"'), "A part of the form names its Content-Type parameter 'charset' more than once: send each once."],
    ['a name given again on a folded line', part('Content-Disposition: form-data; name="json"\r\n ; name="x"'), "A part of the form names its Content-Disposition parameter 'name' more than once: send each once."],
    ['a charset given again on a line folded with a tab', part('Content-Disposition: form-data; name="json"\r\nContent-Type: text/plain; charset=utf-8\r\n\t; charset=utf-16le'), "A part of the form names its Content-Type parameter 'charset' more than once: send each once."],
    ['the second part repeating', `${part('Content-Type: a')}${part('Content-Transfer-Encoding: 8bit\r\nContent-Transfer-Encoding: base64')}`, 'A part of the form has its Content-Transfer-Encoding header more than once: send each part header once.'],
  ])('refuses %s, whatever the chunks', (_what, body, reason) => {
    for (const size of CHUNKS) expect([size, watch(body, size)]).toEqual([size, reason]);
  });

  it('says nothing of a head larger than the multipart reader reads (the reader refuses that body)', () => {
    expect(watch(`--B\r\nX-Long: ${'a'.repeat(20_000)}\r\nContent-Type: a\r\nContent-Type: b\r\n\r\nx`, 4096)).toBeUndefined();
  });
});

describe('PartHeadWatcher.charsetOf', () => {
  /** The charset the watcher reads for the text part `name` of a body fed in chunks of `size` bytes. */
  function charsetOf(body: string, size: number, name = 'json'): string | undefined {
    const watcher = new PartHeadWatcher('B');
    const bytes = Buffer.from(body, 'latin1');
    for (let at = 0; at < bytes.length; at += size) watcher.feed(bytes.subarray(at, at + size));
    return watcher.charsetOf(name);
  }

  it.each([
    ['a token', 'Content-Disposition: form-data; name="json"\r\nContent-Type: text/plain; charset=US-ASCII', 'us-ascii'],
    ['a quoted string', 'content-disposition: FORM-DATA; name=json\r\ncontent-type: application/json; format=x; charset="Windows-1252"', 'windows-1252'],
    ['a folded line', 'Content-Disposition: form-data;\r\n name="json"\r\nContent-Type: application/json;\r\n charset=cp1252', 'cp1252'],
    ['no charset', 'Content-Disposition: form-data; name="json"\r\nContent-Type: application/json', undefined],
    ['no Content-Type', 'Content-Disposition: form-data; name="json"', undefined],
  ])("reads the charset a text part's Content-Type names (%s), in lower case, whatever the chunks", (_what, head, charset) => {
    const body = `${part('Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png; charset=utf-16', 'png')}${part(head, '{}')}--B--\r\n`;
    for (const size of CHUNKS) expect([size, charsetOf(body, size)]).toEqual([size, charset]);
  });

  it('reads none for a part the multipart reader takes for a file or passes over', () => {
    for (const head of [
      'Content-Disposition: form-data; name="json"; filename="dish.json"\r\nContent-Type: application/json; charset=us-ascii',
      "Content-Disposition: form-data; name=\"json\"; filename*=UTF-8''dish.json\r\nContent-Type: application/json; charset=us-ascii",
      'Content-Disposition: form-data; name="json"\r\nContent-Type: application/octet-stream; charset=us-ascii',
      'Content-Disposition: attachment; name="json"\r\nContent-Type: application/json; charset=us-ascii',
      'Content-Type: application/json; charset=us-ascii',
    ]) {
      expect([head, charsetOf(`${part(head, '{}')}--B--\r\n`, 1000)]).toEqual([head, undefined]);
    }
    // Another part's name is its own.
    expect(charsetOf(`${part('Content-Disposition: form-data; name="note"\r\nContent-Type: text/plain; charset=us-ascii')}--B--\r\n`, 1000)).toBeUndefined();
    expect(charsetOf(`${part('Content-Disposition: form-data; name="note"\r\nContent-Type: text/plain; charset=us-ascii')}--B--\r\n`, 1000, 'note')).toBe('us-ascii');
  });
});

describe('parameterNames and boundaryOf', () => {
  it.each([
    ['form-data; name="a"; filename="b"', ['name', 'filename']],
    ['form-data;name=a;FileName*=UTF-8\'\'b', ['name', 'filename*']],
    ['text/plain; x="a;b=c"; y=1', ['x', 'y']],
    ['text/plain; x="a\\";b=c"', ['x']],
    ['text/plain', []],
  ])('reads the parameter names of %j', (value, names) => {
    expect(parameterNames(value)).toEqual(names);
  });

  it.each([
    ['multipart/form-data; boundary=abc', 'abc'],
    ['multipart/form-data; BOUNDARY="a b;c"', 'a b;c'],
    ['multipart/form-data', undefined],
    ['multipart/form-data; charset=x; boundary="a\\"b"', 'a"b'],
    // A backslash before another character is kept, as the multipart reader keeps it.
    ['multipart/form-data; boundary="a\\b"', 'a\\b'],
    ['multipart/form-data; boundary="a\\\\b"', 'a\\b'],
    // As the multipart reader reads it: the first `; boundary=` is inside another parameter's quoted string.
    ['multipart/form-data; foo="; boundary=z"; boundary=q', 'q'],
  ])('takes the boundary of %j', (type, boundary) => {
    expect(boundaryOf(type)).toBe(boundary);
  });

  it('watches the parts of the boundary the multipart reader reads, not one quoted inside another parameter', () => {
    const watcher = partHeadWatcher('multipart/form-data; foo="; boundary=z"; boundary=B');
    const body = `${part('Content-Disposition: form-data; name="json"\r\nContent-Disposition: form-data; name="x"')}--B--\r\n`;
    expect(watcher?.feed(Buffer.from(body, 'latin1'))).toBe('A part of the form has its Content-Disposition header more than once: send each part header once.');
  });

  it('watches the parts of a quoted boundary holding a backslash, which the multipart reader keeps', () => {
    const watcher = partHeadWatcher('multipart/form-data; boundary="a\\b"');
    const body = `--a\\b\r\nContent-Disposition: form-data; name="json"\r\nContent-Disposition: form-data; name="x"\r\n\r\n{}\r\n--a\\b--\r\n`;
    expect(watcher?.feed(Buffer.from(body, 'latin1'))).toBe('A part of the form has its Content-Disposition header more than once: send each part header once.');
  });

  it('watches none without a boundary', () => {
    expect(partHeadWatcher('multipart/form-data')).toBeNull();
  });
});

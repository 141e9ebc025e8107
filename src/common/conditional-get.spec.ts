import { PreconditionFailedException } from '@nestjs/common';
import express from 'express';
import request from 'supertest';
import { answeredNotModified, IF_MATCH_FAILED, ifMatchFailure, preconditionMembers, writePrecondition } from './conditional-get.js';

/** A route that validates with the given ETag, as the visits and image routes do. */
function app(etag: string) {
  const server = express();
  // As the service's setup does: Express's own freshness test answers no request (see setup-app).
  Object.defineProperty(server.request, 'fresh', { configurable: true, get: () => false });
  server.get('/', (req, res) => {
    res.setHeader('Cache-Control', 'private, no-cache');
    try {
      if (answeredNotModified(req, res, etag)) return;
    } catch (error) {
      res.status((error as { getStatus(): number }).getStatus()).type('text/plain').send((error as Error).message);
      return;
    }
    res.type('text/plain').send('body');
  });
  return server;
}

describe('answeredNotModified', () => {
  it.each([
    ['the tag itself', '"abc"', '"abc"'],
    ['a list holding it', '"x", "abc" , "y"', '"abc"'],
    ['any tag', '*', '"abc"'],
    ['any tag, said on two field lines (Node joins them)', '*, *', '"abc"'],
    ['the weak form of a strong tag (weak comparison)', 'W/"abc"', '"abc"'],
    ['the strong form of a weak tag', '"abc"', 'W/"abc"'],
  ])('answers 304 with the validator and no body for %s', async (_what, ifNoneMatch, etag) => {
    const res = await request(app(etag)).get('/').set('If-None-Match', ifNoneMatch);
    expect(res.status).toBe(304);
    expect(res.headers.etag).toBe(etag);
    expect(res.headers['cache-control']).toBe('private, no-cache');
    expect(res.text).toBe('');
  });

  it('answers 304 to a request that also says Cache-Control: no-cache (Node fetch sends it with every If-None-Match)', async () => {
    const res = await request(app('W/"abc"')).get('/').set('If-None-Match', 'W/"abc"').set('Cache-Control', 'no-cache').set('Pragma', 'no-cache');
    expect([res.status, res.text]).toEqual([304, '']);
  });

  it.each([
    ['another tag', '"abd"'],
    ['a list without it', '"x", "y"'],
    ['no If-None-Match', undefined],
    ['the tag with something before it (no list of tags)', 'x"abc"'],
    ['the tag with a parameter after it', '"abc";q=1'],
    ['the tag marked weak in lower case', 'w/"abc"'],
    ['the tag marked weak twice', 'W/W/"abc"'],
    ['the tag without its quotes', 'abc'],
    ['the tag and a malformed member', '"abc", x'],
  ])('answers 200 with the body for %s', async (_what, ifNoneMatch) => {
    const call = request(app('"abc"')).get('/');
    const res = await (ifNoneMatch === undefined ? call : call.set('If-None-Match', ifNoneMatch));
    expect(res.status).toBe(200);
    expect(res.headers.etag).toBe('"abc"');
    expect(res.text).toBe('body');
  });
});

describe('ifMatchFailure (RFC 9110 §13.1.1, strong comparison)', () => {
  const MALFORMED = 'If-Match is neither * nor a list of entity tags ("tag" or W/"tag").';
  it.each([
    ['no If-Match', undefined, '"abc"', null],
    ['*', '*', '"abc"', null],
    ['* of a weak tag', ' * ', 'W/"abc"', null],
    ['the strong tag itself', '"abc"', '"abc"', null],
    ['a list holding it', '"x", "abc"', '"abc"', null],
    ['the weak form of a strong tag', 'W/"abc"', '"abc"', IF_MATCH_FAILED],
    ['a weak tag, even spelt as it is', 'W/"abc"', 'W/"abc"', IF_MATCH_FAILED],
    ['another tag', '"abd"', '"abc"', IF_MATCH_FAILED],
    ['a malformed value', 'abc', '"abc"', MALFORMED],
    ['* said on two field lines', '*, *', '"abc"', null],
    ['a tag holding a comma and a star', '"x,*"', '"abc"', IF_MATCH_FAILED],
    ['a tag holding a comma, and the tag', '"x,y", "abc"', '"abc"', null],
    ['the tag marked weak in lower case', 'w/"abc"', '"abc"', MALFORMED],
    ['the tag with something before it', 'x"abc"', '"abc"', MALFORMED],
    ['the tag and a malformed member', '"abc", x', '"abc"', MALFORMED],
    ['an unclosed tag', '"abc', '"abc"', MALFORMED],
  ])('%s', (_what, header, etag, failure) => {
    expect(ifMatchFailure(header, etag)).toBe(failure);
  });

  it('answers 412 before If-None-Match is weighed, and 200 when If-Match holds', async () => {
    const failed = await request(app('"abc"')).get('/').set('If-Match', '"x"').set('If-None-Match', '"abc"');
    expect(failed.status).toBe(412);
    expect(failed.text).toMatch(/^If-Match names no current representation/);
    const held = await request(app('"abc"')).get('/').set('If-Match', '"abc"');
    expect(held.status).toBe(200);
    expect(held.text).toBe('body');
  });

  it('answers 412 naming the field when If-Match is no list of entity tags', async () => {
    const res = await request(app('"abc"')).get('/').set('If-Match', 'w/"abc"');
    expect([res.status, res.text]).toEqual([412, 'If-Match is neither * nor a list of entity tags ("tag" or W/"tag").']);
  });
});

describe('preconditionMembers (RFC 9110 §13.1.1)', () => {
  it.each([
    ['', []],
    [' , ,', []],
    ['*', ['*']],
    ['"a", W/"b" ,"c,d"', ['"a"', 'W/"b"', '"c,d"']],
    ['"é"', ['"é"']],
  ])('reads %j as its members', (field, members) => {
    expect(preconditionMembers(field)).toEqual(members);
  });

  it.each(['abc', 'w/"a"', 'W/W/"a"', 'x"a"', '"a"x', '"a";q=1', '"a', '"a b"', '"a\tb"', '"a" "b"', '**', '*x'])('reads %j as no list of entity tags', (field) => {
    expect(preconditionMembers(field)).toBeNull();
  });
});

describe('writePrecondition (a write to a resource without entity tags)', () => {
  it.each([
    ['nothing', {}, 'any'],
    ['If-None-Match: *', { 'if-none-match': '*' }, 'absent'],
    ['If-None-Match: * on two field lines', { 'if-none-match': '*, *' }, 'absent'],
    ['If-None-Match: * among tags', { 'if-none-match': '"a", *' }, 'absent'],
    ['If-None-Match naming tags only', { 'if-none-match': '"a", W/"b"' }, 'any'],
    ['If-None-Match naming a tag that holds a comma and a star', { 'if-none-match': '"a,*,b"' }, 'any'],
    ['If-Match: *', { 'if-match': ' * ' }, 'present'],
    ['If-Match: * on two field lines', { 'if-match': '*, *' }, 'present'],
  ])('%s asks for %s', (_what, headers, expected) => {
    expect(writePrecondition(headers, 'a dish')).toBe(expected);
  });

  it.each([
    ['If-Match naming a tag', { 'if-match': '"a"' }, 'If-Match names entity tags, and a dish has none: send If-Match: * to write only over an existing one.'],
    ['If-Match naming * and a tag', { 'if-match': '*, "a"' }, 'If-Match names entity tags, and a dish has none: send If-Match: * to write only over an existing one.'],
    ['an empty If-Match', { 'if-match': '' }, 'If-Match names entity tags, and a dish has none: send If-Match: * to write only over an existing one.'],
    ['If-Match: * with If-None-Match: *', { 'if-match': '*', 'if-none-match': '*, *' }, 'If-Match: * and If-None-Match: * cannot both hold: send one of them.'],
    [
      'an If-Match that is no list of tags',
      { 'if-match': '*x' },
      'If-Match is neither * nor a list of entity tags ("tag" or W/"tag"), and nothing was written: send If-Match: * to write only over an existing one.',
    ],
    [
      'an If-None-Match that is no list of tags',
      { 'if-none-match': '"a", *x' },
      'If-None-Match is neither * nor a list of entity tags ("tag" or W/"tag"), and nothing was written: send If-None-Match: * to add only, or leave it out.',
    ],
  ])('%s is a 412', (_what, headers, message) => {
    let thrown: unknown;
    try {
      writePrecondition(headers, 'a dish');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PreconditionFailedException);
    expect([(thrown as PreconditionFailedException).getStatus(), (thrown as Error).message]).toEqual([412, message]);
  });
});

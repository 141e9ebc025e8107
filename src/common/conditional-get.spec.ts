import express from 'express';
import request from 'supertest';
import { answeredNotModified } from './conditional-get.js';

/** A route that validates with the given ETag, as the visits and image routes do. */
function app(etag: string) {
  const server = express();
  server.get('/', (req, res) => {
    res.setHeader('Cache-Control', 'private, no-cache');
    if (answeredNotModified(req, res, etag)) return;
    res.type('text/plain').send('body');
  });
  return server;
}

describe('answeredNotModified', () => {
  it.each([
    ['the tag itself', '"abc"', '"abc"'],
    ['a list holding it', '"x", "abc" , "y"', '"abc"'],
    ['any tag', '*', '"abc"'],
    ['the weak form of a strong tag (weak comparison)', 'W/"abc"', '"abc"'],
    ['the strong form of a weak tag', '"abc"', 'W/"abc"'],
  ])('answers 304 with the validator and no body for %s', async (_what, ifNoneMatch, etag) => {
    const res = await request(app(etag)).get('/').set('If-None-Match', ifNoneMatch);
    expect(res.status).toBe(304);
    expect(res.headers.etag).toBe(etag);
    expect(res.headers['cache-control']).toBe('private, no-cache');
    expect(res.text).toBe('');
  });

  it.each([
    ['another tag', '"abd"'],
    ['a list without it', '"x", "y"'],
    ['no If-None-Match', undefined],
  ])('answers 200 with the body for %s', async (_what, ifNoneMatch) => {
    const call = request(app('"abc"')).get('/');
    const res = await (ifNoneMatch === undefined ? call : call.set('If-None-Match', ifNoneMatch));
    expect(res.status).toBe(200);
    expect(res.headers.etag).toBe('"abc"');
    expect(res.text).toBe('body');
  });
});

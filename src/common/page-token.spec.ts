import { createHmac } from 'node:crypto';
import { loadConfig } from '../config/app-config.js';
import { derivedPageTokenKey, PAGE_TOKEN_PATTERN, PageTokens } from './page-token.js';

const KEY = 'a page-token key of the tests';

/** A token as issued before tokens were sealed: JSON and its HMAC-SHA-256. */
function signedToken(key: string, payload: unknown): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

describe('PageTokens', () => {
  const tokens = new PageTokens(KEY);

  it('gives back the query and the position a token holds', () => {
    const token = tokens.encode('changes:standard:1001::', [2515]);
    expect(token).toMatch(new RegExp(PAGE_TOKEN_PATTERN));
    expect(tokens.open(token)).toEqual({ scope: 'changes:standard:1001::', position: [2515] });
    expect(tokens.open(tokens.encode('dishes:1001:7', [2147483648, 'x']))).toEqual({ scope: 'dishes:1001:7', position: [2147483648, 'x'] });
  });

  it('shows nothing of the position or the query, and is never the same twice', () => {
    const first = tokens.encode('changes:standard:1001::', [2515]);
    const second = tokens.encode('changes:standard:1001::', [2515]);
    expect(first).not.toBe(second);
    for (const token of [first, second]) {
      const bytes = Buffer.concat(token.split('.').map((part) => Buffer.from(part, 'base64url'))).toString('latin1');
      expect(bytes).not.toContain('2515');
      expect(bytes).not.toContain('changes');
    }
  });

  it('is as long for one query whatever its position: its length tells nothing of how far a client has written', () => {
    const lengths = [0, 9, 99_999, 999_999_999_999_999].map((seq) => tokens.encode('changes:standard:1001:5:', [seq]).length);
    expect(new Set(lengths).size).toBe(1);
    const visits = ['2026-11-01T09:00:00', '2026-11-30T23:59:59.999'].flatMap((at) => [1, 2_147_483_647].map((id) => tokens.encode('visits:1001', [at, id]).length));
    expect(new Set(visits).size).toBe(1);
    // A change-feed token holds the brands and visit types its page was read with: a credential of many brands.
    const selection = `${Array.from({ length: 40 }, (_, i) => 100_001 + i).join(',')}/MV,OF`;
    const marked = [0, 9, 99_999, 999_999_999_999_999].map((seq) => tokens.encode('changes:standard:1001::', [seq, selection]).length);
    expect(new Set(marked).size).toBe(1);
    expect(tokens.open(tokens.encode('changes:standard:1001:5:', [9]))).toEqual({ scope: 'changes:standard:1001:5:', position: [9] });
  });

  it('refuses an edited, truncated, made-up or foreign token', () => {
    const token = tokens.encode('menus:1001', [5]);
    const [sealed, tag] = token.split('.') as [string, string];
    const flipped = (part: string, at: number): string => {
      const bytes = Buffer.from(part, 'base64url');
      bytes[at] = (bytes[at] ?? 0) ^ 1;
      return bytes.toString('base64url');
    };
    for (const bad of [
      `${flipped(sealed, sealed.length > 20 ? 15 : 1)}.${tag}`,
      `${sealed}.${flipped(tag, 0)}`,
      `${sealed.slice(0, 8)}.${tag}`,
      `${sealed}.${tag.slice(0, 10)}`,
      `${sealed}.${tokens.encode('menus:1001', [5]).split('.')[1]}`,
      new PageTokens('another key').encode('menus:1001', [5]),
      signedToken('another key', { s: 'menus:1001', p: [5] }),
      'AQ.AQ',
      'abc',
      `${token}.x`,
      '.',
      // Characters base64 decoding passes over, and another spelling of the same bytes.
      `${token}!!!`,
      `${sealed.slice(0, 10)}!${sealed.slice(10)}.${tag}`,
      `${sealed.slice(0, 10)}%20${sealed.slice(10)}.${tag}`,
      `${sealed}==.${tag}`,
      `${sealed}.${tag}==`,
      `${sealed.replace(/-/g, '+').replace(/_/g, '/')}.${tag.replace(/-/g, '+').replace(/_/g, '/')}`,
      `${sealed.slice(0, -1)}${String.fromCharCode(sealed.charCodeAt(sealed.length - 1) ^ 1)}.${tag}`,
    ].filter((other) => other !== token)) {
      expect([bad, tokens.open(bad)]).toEqual([bad, undefined]);
    }
  });

  it('takes a token issued before tokens were sealed, and refuses one whose JSON is no token', () => {
    expect(tokens.open(signedToken(KEY, { s: 'changes:plus:1001::', p: [42] }))).toEqual({ scope: 'changes:plus:1001::', position: [42] });
    for (const payload of [null, 7, 'menus:1001', { s: 'menus:1001', p: 5 }, { s: 7, p: [1] }]) {
      expect([payload, tokens.open(signedToken(KEY, payload))]).toEqual([payload, undefined]);
    }
  });

  describe('with keys whose tokens are opened too (PAGE_TOKEN_ACCEPTED_KEYS)', () => {
    const OTHER = 'the key of another step';

    it('seals under its own key, and opens tokens sealed or signed under an accepted one', () => {
      const changing = new PageTokens(OTHER, [KEY]);
      const ofBefore = tokens.encode('menus:1001', [5]);
      expect(changing.open(ofBefore)).toEqual({ scope: 'menus:1001', position: [5] });
      expect(changing.open(signedToken(KEY, { s: 'menus:1001', p: [6] }))).toEqual({ scope: 'menus:1001', position: [6] });
      const sealed = changing.encode('menus:1001', [7]);
      // Under OTHER: a replica that does not accept it refuses it, one that does opens it.
      expect(tokens.open(sealed)).toBeUndefined();
      expect(new PageTokens(KEY, [OTHER]).open(sealed)).toEqual({ scope: 'menus:1001', position: [7] });
      expect(new PageTokens(OTHER).open(sealed)).toEqual({ scope: 'menus:1001', position: [7] });
    });

    it('refuses what none of its keys sealed, and an accepted key edited', () => {
      const changing = new PageTokens(OTHER, [KEY, KEY, OTHER]);
      expect(changing.open(new PageTokens('a third key of some length').encode('menus:1001', [5]))).toBeUndefined();
      expect(changing.open(signedToken('a third key of some length', { s: 'menus:1001', p: [5] }))).toBeUndefined();
      const token = changing.encode('menus:1001', [5]);
      expect(changing.open(`${token.slice(0, -2)}${token.endsWith('A') ? 'BA' : 'AA'}`)).toBeUndefined();
    });

    it('takes them from the configuration, each without the spaces around it', () => {
      const config = loadConfig({ PAGE_TOKEN_KEY: OTHER, PAGE_TOKEN_ACCEPTED_KEYS: ` ${KEY} ,another accepted key ` });
      expect(config.pageTokenAcceptedKeys).toEqual([KEY, 'another accepted key']);
      expect(PageTokens.fromConfig(config).open(tokens.encode('menus:1001', [5]))).toEqual({ scope: 'menus:1001', position: [5] });
      // A deployment without PAGE_TOKEN_KEY seals under the key derived from API_KEY_HASH_KEY: the one to accept when setting one.
      const derived = PageTokens.fromConfig(loadConfig({ API_KEY_HASH_KEY: 'an api-key hash key' }));
      const setting = PageTokens.fromConfig(loadConfig({ API_KEY_HASH_KEY: 'an api-key hash key', PAGE_TOKEN_KEY: OTHER, PAGE_TOKEN_ACCEPTED_KEYS: derivedPageTokenKey('an api-key hash key') }));
      expect(setting.open(derived.encode('menus:1001', [8]))).toEqual({ scope: 'menus:1001', position: [8] });
    });
  });
});

import type { IncomingMessage } from 'node:http';
import { FORM_ESCAPES_TYPE, verifyFormEscapes } from './form-escapes.js';

const req = {} as IncomingMessage;

/** What verifyFormEscapes throws for a form, as body-parser would hand it over; undefined when it passes. */
function refusal(body: string | Buffer, charset = 'utf-8'): { message: string; status: unknown; type: unknown } | undefined {
  try {
    verifyFormEscapes(req, undefined, typeof body === 'string' ? Buffer.from(body, 'latin1') : body, charset);
    return undefined;
  } catch (error) {
    const e = error as Error & { status?: unknown; type?: unknown };
    return { message: e.message, status: e.status, type: e.type };
  }
}

describe('verifyFormEscapes', () => {
  it.each([
    ['plain fields', 'grant_type=client_credentials&client_id=svc_1&scope=a+b'],
    ['escapes of UTF-8', 'scope=%C3%A9%F0%9F%8D%95&x=100%25'],
    ['U+FFFD sent as its escapes', 'x=%EF%BF%BD'],
    ['raw UTF-8 bytes', Buffer.from('scope=é🍕')],
    ['empty fields and names', '&&=&a='],
  ])('passes %s', (_what, body) => {
    expect(refusal(body)).toBeUndefined();
  });

  it.each([
    ["a '%' before no hex digits", 'a=1&scope=%ZZ', "The form field 'scope' holds a '%' that starts no percent-escape: send '%' as %25."],
    ["a '%' at the end", 'client_id=abc%', "The form field 'client_id' holds a '%' that starts no percent-escape: send '%' as %25."],
    ["a '%' before one hex digit", 'client_id=%A', "The form field 'client_id' holds a '%' that starts no percent-escape: send '%' as %25."],
    ['escapes that are no UTF-8', 'scope=%C3%28', "The form field 'scope' holds percent-escapes whose bytes are not UTF-8."],
    ['an escaped name', 'sc%6Fpe=%FF', "The form field 'scope' holds percent-escapes whose bytes are not UTF-8."],
    ['a long name, cut', `${'n'.repeat(50)}=%FF`, `The form field '${'n'.repeat(40)}…' holds percent-escapes whose bytes are not UTF-8.`],
    ['raw bytes that are no UTF-8', Buffer.from([0x61, 0x3d, 0xe9]), 'The form is not UTF-8 text: send its bytes as UTF-8, or name its charset (iso-8859-1).'],
  ])('refuses %s with a 400 naming the field', (_what, body, message) => {
    expect(refusal(body)).toEqual({ message, status: 400, type: FORM_ESCAPES_TYPE });
  });

  it('takes every byte and escape of an iso-8859-1 form as a character, but still refuses a lone %', () => {
    expect(refusal(Buffer.from([0x61, 0x3d, 0xe9, 0x25, 0x45, 0x39]), 'iso-8859-1')).toBeUndefined();
    expect(refusal('a=%E', 'iso-8859-1')?.message).toBe("The form field 'a' holds a '%' that starts no percent-escape: send '%' as %25.");
  });
});

import fc from 'fast-check';
import { ByteWriter } from './byte-writer.js';
import { propertyRuns } from '../../test/helpers/property-runs.js';

describe('ByteWriter', () => {
  it('writes exactly the UTF-8 bytes of the concatenated texts, whatever the first guess', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 40 }), fc.nat(300), (parts, guess) => {
        const out = new ByteWriter(guess);
        for (const part of parts) out.text(part);
        expect(out.result().equals(Buffer.from(parts.join(''), 'utf8'))).toBe(true);
      }),
      propertyRuns(500),
    );
  });

  it('grows past its first guess with multi-byte characters at the very end', () => {
    const out = new ByteWriter(256);
    const ascii = 'a'.repeat(250);
    const wide = '€😀'.repeat(100);
    const result = out.text(ascii).text(wide).result();
    expect(result.length).toBe(250 + 100 * (3 + 4));
    expect(result.toString('utf8')).toBe(ascii + wide);
  });

  it('appends bytes and texts in any mix', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ unit: 'binary' }), fc.boolean()), { maxLength: 40 }), fc.nat(300), (parts, guess) => {
        const out = new ByteWriter(guess);
        for (const [part, asBytes] of parts) {
          if (asBytes) out.bytes(Buffer.from(part, 'utf8'));
          else out.text(part);
        }
        expect(out.result().equals(Buffer.from(parts.map(([part]) => part).join(''), 'utf8'))).toBe(true);
      }),
      propertyRuns(300),
    );
  });

  it('hands back a buffer of its own size when much of the first guess is unused', () => {
    const result = new ByteWriter(1_000_000).text('{}').result();
    expect(result.toString()).toBe('{}');
    expect(result.buffer.byteLength).toBeLessThan(1_000_000);
  });
});

import { formatBytes } from './byte-size.js';

describe('formatBytes', () => {
  it.each([
    [5 * 1024 * 1024, '5 MiB'],
    [200 * 1024, '200 KiB'],
    [5_000_000, '4.8 MiB'],
    [1536, '1.5 KiB'],
    [2_048_000, '1.95 MiB'],
    [900, '900 bytes'],
  ])('writes %d bytes as %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

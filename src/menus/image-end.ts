/**
 * Where an encoded image ends, by its own structure: bytes after that are no part of it (a
 * page of HTML appended to a PNG, say) and are never stored. Null when the structure cannot
 * be followed to its end.
 */
export function imageEnd(bytes: Buffer, format: 'jpeg' | 'png' | 'webp'): number | null {
  if (format === 'png') return pngEnd(bytes);
  if (format === 'webp') return webpEnd(bytes);
  return jpegEnd(bytes);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** The signature, then chunks (length, type, data, CRC) up to and with IEND. */
function pngEnd(b: Buffer): number | null {
  if (b.length < 8 || !b.subarray(0, 8).equals(PNG_SIGNATURE)) return null;
  let at = 8;
  while (at + 12 <= b.length) {
    const length = b.readUInt32BE(at);
    const end = at + 12 + length;
    if (end > b.length) return null;
    if (b.toString('latin1', at + 4, at + 8) === 'IEND') return end;
    at = end;
  }
  return null;
}

/** A RIFF file: 'RIFF', the size of what follows the first eight bytes, 'WEBP'. */
function webpEnd(b: Buffer): number | null {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') return null;
  const end = 8 + b.readUInt32LE(4);
  return end <= b.length ? end : null;
}

/**
 * SOI, then marker segments; after each SOS the entropy-coded data runs to the next marker
 * that is neither a stuffed 0xFF00 nor a restart marker; EOI ends the image.
 */
function jpegEnd(b: Buffer): number | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return null;
  let at = 2;
  while (at < b.length) {
    if (b[at] !== 0xff) return null;
    while (at < b.length && b[at] === 0xff) at++; // fill bytes
    if (at >= b.length) return null;
    const marker = b[at++];
    if (marker === 0xd9) return at;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length
    if (at + 2 > b.length) return null;
    const length = b.readUInt16BE(at);
    if (length < 2) return null;
    at += length;
    if (marker !== 0xda) continue;
    for (;;) {
      at = b.indexOf(0xff, at);
      if (at < 0 || at + 1 >= b.length) return null;
      const next = b[at + 1];
      if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) at += 2;
      else if (next === 0xff) at += 1;
      else break;
    }
  }
  return null;
}

import { crc32, deflateSync, inflateSync } from 'node:zlib';
import sharp from 'sharp';

/** Real encoded images, made here so the tests need no binary fixtures. */
export async function makeImage(format: 'jpeg' | 'png' | 'webp', width = 64, height = 48, colour = '#c0392b'): Promise<Buffer> {
  const image = sharp({ create: { width, height, channels: 3, background: colour } });
  if (format === 'jpeg') return image.jpeg({ quality: 80 }).toBuffer();
  if (format === 'png') return image.png().toBuffer();
  return image.webp({ quality: 80 }).toBuffer();
}

/** A JPEG carrying EXIF with a GPS position, as phones write them. */
export async function jpegWithLocation(): Promise<Buffer> {
  return sharp({ create: { width: 40, height: 30, channels: 3, background: '#2980b9' } })
    .withExif({
      IFD0: { Make: 'PhoneCo', Model: 'Camera 9', Copyright: 'Guest' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '53/1 47/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '1/1 32/1 0/1' },
    })
    .jpeg()
    .toBuffer();
}

/**
 * A PNG of exactly `bytes` bytes, every one of them the picture's (so the service stores it
 * whole when it is within the limit): a grey image 255 pixels wide (1,023 past 1 MB, within the
 * 20,000 pixels a side) whose pixel data is written
 * uncompressed (deflate's stored blocks), its height chosen to come near the size, the rest
 * made up by empty stored blocks (5 bytes each) and the data split over more IDAT chunks (12
 * bytes each). At least 1,100 bytes.
 */
export function pngOfSize(bytes: number): Buffer {
  const width = bytes > 1_000_000 ? 1023 : 255;
  const row = width + 1; // a filter byte, then the samples
  // Signature, IHDR, one IDAT's frame, IEND; then the zlib header and its Adler-32.
  const frame = 8 + 25 + 12 + 12 + 2 + 4;
  const blocksFor = (raw: number) => Math.max(1, Math.ceil(raw / 65535));
  for (let height = Math.floor((bytes - frame) / row); height >= 4; height--) {
    const raw = height * row;
    const rest = bytes - frame - raw - 5 * blocksFor(raw);
    // rest = 5 x (empty blocks) + 12 x (more IDAT chunks): every number from 44 on is one.
    for (let chunks = 0; rest >= 0 && 12 * chunks <= rest; chunks++) {
      if ((rest - 12 * chunks) % 5 !== 0) continue;
      const samples = Buffer.alloc(raw);
      for (let y = 0; y < height; y++) for (let x = 1; x < row; x++) samples[y * row + x] = (x * 7 + y * 13) & 0xff;
      const blocks: Buffer[] = [];
      for (let i = 0; i < (rest - 12 * chunks) / 5; i++) blocks.push(Buffer.from([0, 0, 0, 0xff, 0xff])); // an empty stored block
      for (let at = 0; at < raw; at += 65535) {
        const part = samples.subarray(at, Math.min(raw, at + 65535));
        const head = Buffer.from([at + 65535 >= raw ? 1 : 0, 0, 0, 0, 0]);
        head.writeUInt16LE(part.length, 1);
        head.writeUInt16LE(part.length ^ 0xffff, 3);
        blocks.push(head, part);
      }
      const adler = Buffer.alloc(4);
      adler.writeUInt32BE(adler32(samples));
      const stream = Buffer.concat([Buffer.from([0x78, 0x01]), ...blocks, adler]);
      const header = Buffer.alloc(13);
      header.writeUInt32BE(width, 0);
      header.writeUInt32BE(height, 4);
      header[8] = 8; // bit depth; colour type 0, grey
      const step = Math.ceil(stream.length / (chunks + 1));
      const idat = Array.from({ length: chunks + 1 }, (_, i) => pngChunk('IDAT', stream.subarray(i * step, (i + 1) * step)));
      const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', header), ...idat, pngChunk('IEND', Buffer.alloc(0))]);
      if (png.length !== bytes) throw new Error(`made a PNG of ${png.length} bytes for ${bytes}`);
      return png;
    }
  }
  throw new Error(`a PNG of ${bytes} bytes cannot be made here`);
}

function adler32(bytes: Buffer): number {
  let a = 1;
  let b = 0;
  for (let i = 0; i < bytes.length; i++) {
    a = (a + bytes[i]) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** A JPEG with a segment (marker, data) right after SOI. */
export function jpegWith(image: Buffer, marker: number, data: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(data.length + 2);
  return Buffer.concat([image.subarray(0, 2), Buffer.from([0xff, marker]), length, data, image.subarray(2)]);
}

/** A PNG with a chunk of `type` (and its CRC) just before IEND. */
export function pngWith(image: Buffer, type: string, data: Buffer): Buffer {
  return Buffer.concat([image.subarray(0, image.length - 12), pngChunk(type, data), image.subarray(image.length - 12)]);
}

/** A PNG with a chunk of `type` (and its CRC) just before its first chunk of type `before` (IDAT, PLTE). */
export function pngWithBefore(image: Buffer, before: string, type: string, data: Buffer): Buffer {
  let at = 8;
  while (image.toString('latin1', at + 4, at + 8) !== before) at += 12 + image.readUInt32BE(at);
  return Buffer.concat([image.subarray(0, at), pngChunk(type, data), image.subarray(at)]);
}

/** An animated PNG (APNG) of `frames` frames, each of one grey: the default image (IDAT) is the first frame, fdAT chunks hold the others. */
export function animatedPng(frames: number, width = 4, height = 4): Buffer {
  const pixels = (grey: number) => deflateSync(Buffer.concat(Array.from({ length: height }, () => Buffer.from([0, ...Array<number>(width).fill(grey)]))));
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth; colour type 0, grey
  const control = Buffer.alloc(8);
  control.writeUInt32BE(frames, 0); // num_frames; num_plays 0, forever
  let sequence = 0;
  const frameControl = () => {
    const data = Buffer.alloc(26);
    data.writeUInt32BE(sequence++, 0);
    data.writeUInt32BE(width, 4);
    data.writeUInt32BE(height, 8);
    data.writeUInt16BE(1, 20); // delay 1/10 s
    data.writeUInt16BE(10, 22);
    return pngChunk('fcTL', data);
  };
  const chunks = [pngChunk('IHDR', header), pngChunk('acTL', control), frameControl(), pngChunk('IDAT', pixels(0))];
  for (let i = 1; i < frames; i++) {
    chunks.push(frameControl());
    const data = Buffer.alloc(4);
    data.writeUInt32BE(sequence++, 0);
    chunks.push(pngChunk('fdAT', Buffer.concat([data, pixels((i * 80) % 256)])));
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ...chunks, pngChunk('IEND', Buffer.alloc(0))]);
}

/** A PNG chunk: its length, type, data and CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])));
  return Buffer.concat([head, data, crc]);
}

/** A WebP with a chunk of `type` added at its end, the RIFF size grown to hold it. */
export function webpWith(image: Buffer, type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(data.length, 4);
  const out = Buffer.concat([image, head, data, Buffer.alloc(data.length % 2)]);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

/** A PNG whose first IDAT chunk carries `data` after its zlib stream (its CRC made good). */
export function pngWithinPixelData(image: Buffer, data: Buffer): Buffer {
  let at = 8;
  while (image.toString('latin1', at + 4, at + 8) !== 'IDAT') at += 12 + image.readUInt32BE(at);
  const length = image.readUInt32BE(at);
  const body = Buffer.concat([image.subarray(at + 8, at + 8 + length), data]);
  return Buffer.concat([image.subarray(0, at), pngChunk('IDAT', body), image.subarray(at + 12 + length)]);
}

/** A PNG with one more IDAT chunk, holding `data`, right after its last one. */
export function pngWithExtraPixelData(image: Buffer, data: Buffer): Buffer {
  let at = 8;
  let afterLast = 0;
  while (at + 12 <= image.length) {
    const end = at + 12 + image.readUInt32BE(at);
    if (image.toString('latin1', at + 4, at + 8) === 'IDAT') afterLast = end;
    at = end;
  }
  return Buffer.concat([image.subarray(0, afterLast), pngChunk('IDAT', data), image.subarray(afterLast)]);
}

/** An animated WebP of `frames` frames of width × height, in two colours by turns. */
export async function animatedWebp(frames: number, width = 32, height = 32): Promise<Buffer> {
  const frame = (i: number) => sharp({ create: { width, height, channels: 3, background: i % 2 ? '#c0392b' : '#2980b9' } }).png().toBuffer();
  const pngs = await Promise.all(Array.from({ length: frames }, (_, i) => frame(i)));
  return sharp(pngs, { join: { animated: true }, limitInputPixels: false }).webp({ loop: 0, lossless: true, effort: 0 }).toBuffer();
}

/** A WebP whose first chunk of `type` has `data` after its own, its size and the RIFF size grown to hold it. */
export function webpChunkGrown(image: Buffer, type: string, data: Buffer): Buffer {
  let at = 12;
  while (image.toString('latin1', at, at + 4) !== type) at += 8 + image.readUInt32LE(at + 4) + (image.readUInt32LE(at + 4) & 1);
  const size = image.readUInt32LE(at + 4);
  const grown = size + data.length;
  const out = Buffer.concat([image.subarray(0, at + 8 + size), data, Buffer.alloc(grown & 1), image.subarray(at + 8 + size + (size & 1))]);
  out.writeUInt32LE(grown, at + 4);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

/** A WebP with a chunk of `type` holding `data` inside its first animation frame (ANMF), the sizes grown to hold it. */
export function webpWithinFrame(image: Buffer, type: string, data: Buffer): Buffer {
  let at = 12;
  while (image.toString('latin1', at, at + 4) !== 'ANMF') at += 8 + image.readUInt32LE(at + 4) + (image.readUInt32LE(at + 4) & 1);
  const size = image.readUInt32LE(at + 4);
  const sub = Buffer.alloc(8);
  sub.write(type, 0, 'latin1');
  sub.writeUInt32LE(data.length, 4);
  const added = Buffer.concat([sub, data, Buffer.alloc(data.length % 2)]);
  const out = Buffer.concat([image.subarray(0, at + 8 + size), added, image.subarray(at + 8 + size)]);
  out.writeUInt32LE(size + added.length, at + 4);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

/** A PNG whose pixel data, one IDAT, inflates to the picture's rows and then `data`: bytes inside the zlib stream, after the last row. */
export function pngWithinInflatedData(image: Buffer, data: Buffer): Buffer {
  const idat: Buffer[] = [];
  let at = 8;
  let first = -1;
  let afterLast = 0;
  while (at + 12 <= image.length) {
    const end = at + 12 + image.readUInt32BE(at);
    if (image.toString('latin1', at + 4, at + 8) === 'IDAT') {
      if (first < 0) first = at;
      idat.push(image.subarray(at + 8, end - 4));
      afterLast = end;
    }
    at = end;
  }
  const body = deflateSync(Buffer.concat([inflateSync(Buffer.concat(idat)), data]));
  return Buffer.concat([image.subarray(0, first), pngChunk('IDAT', body), image.subarray(afterLast)]);
}

/** The WebP's chunks at the top level: each one's type, where its head starts and its size. */
function webpChunkList(image: Buffer): { type: string; at: number; size: number }[] {
  const chunks: { type: string; at: number; size: number }[] = [];
  for (let at = 12; at + 8 <= image.length; ) {
    const size = image.readUInt32LE(at + 4);
    chunks.push({ type: image.toString('latin1', at, at + 4), at, size });
    at += 8 + size + (size & 1);
  }
  return chunks;
}

/** A WebP whose first chunk of `type` holds `data` instead of its own, the sizes made to fit. */
export function webpChunkReplaced(image: Buffer, type: string, data: Buffer): Buffer {
  const chunk = webpChunkList(image).find((c) => c.type === type);
  if (!chunk) throw new Error(`no ${type} chunk`);
  const head = Buffer.alloc(8);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(data.length, 4);
  const out = Buffer.concat([image.subarray(0, chunk.at), head, data, Buffer.alloc(data.length & 1), image.subarray(chunk.at + 8 + chunk.size + (chunk.size & 1))]);
  out.writeUInt32LE(out.length - 8, 4);
  return out;
}

/** The WebP with `byte` as the padding byte of its first chunk of odd size; null when each is of even size. */
export function webpPaddedWith(image: Buffer, byte: number): Buffer | null {
  const chunk = webpChunkList(image).find((c) => (c.size & 1) === 1);
  if (!chunk) return null;
  const out = Buffer.from(image);
  out[chunk.at + 8 + chunk.size] = byte;
  return out;
}

import { crc32, createInflate, inflateSync } from 'node:zlib';

/** What an encoded image's own structure says of it. */
export interface ImageStructure {
  /** Where the image ends: bytes after that are no part of it. Null when the structure cannot be followed to its end. */
  end: number | null;
  /**
   * Whether it holds data that is no part of the picture: comments, application segments or
   * chunks other than the colour profile and the format's own (where a location, a script or
   * a whole other file may hide).
   */
  extras: boolean;
  /**
   * Whether the bytes stop before the image's own end does: a PNG before IEND (or at a chunk
   * whose CRC fails), a JPEG before EOI, a WebP before the size its RIFF header gives. Its
   * picture may still decode whole; the file is cut short all the same.
   */
  cutShort: boolean;
}

/**
 * Follows an image's structure to its end: bytes after it (a page of HTML appended to a PNG,
 * say) are never stored, nor segments and chunks that are no part of the picture.
 */
export function imageStructure(bytes: Buffer, format: 'jpeg' | 'png' | 'webp'): ImageStructure {
  if (format === 'png') return pngStructure(bytes);
  if (format === 'webp') return webpStructure(bytes);
  return jpegStructure(bytes);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * The chunks of the picture itself, its colour (iCCP, sRGB, gAMA, cHRM, sBIT) and its pixel size.
 * Not a suggested palette (sPLT): a name of any text and entries of any bytes, as long as they
 * come, that no decoder draws; a page of HTML or a location rode in one and was kept byte for byte.
 */
const PNG_PICTURE = new Set(['IHDR', 'PLTE', 'IDAT', 'IEND', 'tRNS', 'cHRM', 'gAMA', 'iCCP', 'sBIT', 'sRGB', 'bKGD', 'hIST', 'pHYs']);

/** The format whose signature the bytes start with, whether or not the rest of them is whole; null for none of the three. */
export function signedFormat(b: Buffer): 'jpeg' | 'png' | 'webp' | null {
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  return isRiffWebp(b) ? 'webp' : null;
}

const isRiffWebp = (b: Buffer): boolean => b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP';

/**
 * A PNG's chunks after the signature, in order, up to and with IEND: each one's type and where
 * its data starts and ends; `whole` is false when the bytes end before IEND does, or a chunk
 * before it fails its CRC.
 */
function pngChunks(b: Buffer): { chunks: { type: string; data: number; dataEnd: number }[]; whole: boolean } {
  const chunks: { type: string; data: number; dataEnd: number }[] = [];
  for (let at = 8; at + 12 <= b.length; ) {
    const dataEnd = at + 8 + b.readUInt32BE(at);
    if (dataEnd + 4 > b.length) break;
    // A chunk whose CRC fails is corrupt (PNG §5.3): decoders refuse it in the header, and
    // this service serves what it stored, so it is no whole PNG.
    if (crc32(b.subarray(at + 4, dataEnd)) !== b.readUInt32BE(dataEnd)) break;
    const type = b.toString('latin1', at + 4, at + 8);
    chunks.push({ type, data: at + 8, dataEnd });
    if (type === 'IEND') return { chunks, whole: true };
    at = dataEnd + 4;
  }
  return { chunks, whole: false };
}

/**
 * The frames an animated PNG (APNG) says it has in its acTL chunk; 1 for a PNG without one.
 * libvips reads a PNG's default image only: the other frames would be dropped.
 */
export function pngAnimationFrames(b: Buffer): number {
  if (signedFormat(b) !== 'png') return 1;
  const control = pngChunks(b).chunks.find((c) => c.type === 'acTL');
  return control && control.dataEnd - control.data >= 4 ? b.readUInt32BE(control.data) : 1;
}

/** The signature, then chunks (length, type, data, CRC) up to and with IEND; a colour profile that is none is an extra. */
function pngStructure(b: Buffer): ImageStructure {
  if (signedFormat(b) !== 'png') return { end: null, extras: false, cutShort: false };
  const { chunks, whole } = pngChunks(b);
  // One profile at most (PNG §11.3.3.3): each one is inflated, up to ICC_MAX_BYTES.
  const profiles = chunks.filter((c) => c.type === 'iCCP');
  const palette = chunks.find((c) => c.type === 'PLTE');
  const entries = palette ? (palette.dataEnd - palette.data) / 3 : 0;
  // One of each but IDAT (PNG §5.6): libpng skips a second pHYs, gAMA or PLTE unread, as a benign error.
  // Counted in one pass: a file of 5 MiB holds some 400,000 empty chunks of as many types.
  const seen = new Set<string>();
  const repeated = chunks.some((c) => c.type !== 'IDAT' && (seen.has(c.type) || (seen.add(c.type), false)));
  const extras =
    repeated ||
    !pngChunksInPlace(chunks.map((c) => c.type), b[25]) ||
    chunks.some((c) => !PNG_PICTURE.has(c.type) || !pngChunkFits(c.type, c.dataEnd - c.data, b[25], entries)) ||
    profiles.length > 1 ||
    (profiles.length === 1 && !pngProfileIsWhole(b.subarray(profiles[0].data, profiles[0].dataEnd)));
  return { end: whole ? chunks[chunks.length - 1].dataEnd + 4 : null, extras, cutShort: !whole };
}

/** The chunks of a PNG's colour, which come before its palette (PNG §5.6). */
const PNG_COLOUR = new Set(['cHRM', 'gAMA', 'iCCP', 'sBIT', 'sRGB']);

/** The chunks that go with a palette, after it (PNG §5.6). */
const PNG_AFTER_PALETTE = new Set(['tRNS', 'bKGD', 'hIST']);

/**
 * Whether the picture's chunks are where PNG §5.6 puts them, where libpng reads them: every one
 * before the pixel data (IDAT, in one run), IEND after it, the colour's before the palette and
 * the palette's own (tRNS, bKGD, hIST) after it, and a palette (PLTE) in a palette image alone.
 * libpng skips a chunk out of place unread, as a benign error: a pHYs or gAMA after IDAT, of the
 * right length and once, carried its nine or four bytes of anything, and a PLTE in an RGB image
 * (a suggested palette no decoder draws, which sharp and libpng never write) 768 bytes.
 */
function pngChunksInPlace(types: readonly string[], colourType: number): boolean {
  const pixels = types.indexOf('IDAT');
  const palette = types.indexOf('PLTE');
  if (palette >= 0 && colourType !== 3) return false;
  return types.every((type, i) => {
    if (pixels >= 0 && i > pixels) return type === 'IDAT' || (type === 'IEND' && i === types.length - 1);
    if (PNG_COLOUR.has(type)) return palette < 0 || i < palette;
    if (type === 'hIST') return palette >= 0 && i > palette;
    if (PNG_AFTER_PALETTE.has(type)) return palette < 0 || i > palette;
    return true;
  });
}

/** The length a PNG chunk of fixed fields has (PNG §11), by the image's colour type: 0 grey, 2 RGB, 3 palette, 4 grey and alpha, 6 RGBA. */
const PNG_FIELDS: Readonly<Record<string, number | Readonly<Record<number, number>>>> = {
  IHDR: 13,
  IEND: 0,
  gAMA: 4,
  sRGB: 1,
  cHRM: 32,
  pHYs: 9,
  sBIT: { 0: 1, 2: 3, 3: 3, 4: 2, 6: 4 },
  bKGD: { 0: 2, 2: 6, 3: 1, 4: 2, 6: 6 },
};

/**
 * Whether a chunk of the picture is no longer than its fields: libpng takes a chunk of the wrong
 * length for a benign error and skips it, so a page of HTML or a location rode in a pHYs or gAMA
 * grown past its fields. A palette holds whole entries, at most 256; its transparency (tRNS) and
 * histogram (hIST) one value for each entry at most (hIST exactly); tRNS of a grey or RGB image
 * one colour.
 */
function pngChunkFits(type: string, length: number, colourType: number, paletteEntries: number): boolean {
  if (type === 'PLTE') return length % 3 === 0 && length <= 768;
  if (type === 'hIST') return length === 2 * paletteEntries;
  if (type === 'tRNS') return colourType === 3 ? length <= paletteEntries : length === ({ 0: 2, 2: 6 } as Record<number, number>)[colourType];
  const fields = PNG_FIELDS[type];
  if (fields === undefined) return true;
  return length === (typeof fields === 'number' ? fields : fields[colourType]);
}

/** The chunks of the picture (lossy, lossless, alpha, animation) and its colour profile. */
const WEBP_PICTURE = new Set(['VP8 ', 'VP8L', 'VP8X', 'ALPH', 'ANIM', 'ANMF', 'ICCP']);

/** The bytes of the WebP chunks that hold fields alone: the features (VP8X) and the animation's background and loop (ANIM). */
const WEBP_FIELDS: Readonly<Record<string, number>> = { VP8X: 10, ANIM: 6 };

/** The chunks of an animation frame (ANMF), after its 16 bytes of position, size and timing. */
const WEBP_FRAME = new Set(['ALPH', 'VP8 ', 'VP8L']);

/** A RIFF file: 'RIFF', the size of what follows the first eight bytes, 'WEBP', then chunks (type, size, data padded to even). */
function webpStructure(b: Buffer): ImageStructure {
  if (!isRiffWebp(b)) return { end: null, extras: false, cutShort: false };
  const end = 8 + b.readUInt32LE(4);
  if (end > b.length) return { end: null, extras: false, cutShort: true };
  // Every chunk but a frame comes once, in the file and in each frame: decoders read the first
  // and skip the others unread (a second ANIM, six bytes of anything, any number of times).
  const once = (): ((type: string) => boolean) => {
    const seen = new Set<string>();
    return (type) => type === 'ANMF' || (!seen.has(type) && seen.add(type) !== undefined);
  };
  const first = once();
  const top = alphaCheck(b);
  const extras = !webpChunks(b, 12, end, (type, data, dataEnd) => {
    if (!WEBP_PICTURE.has(type) || !first(type)) return false;
    top.see(type, data, dataEnd);
    if (type === 'ICCP') return iccProfileIsWhole(b.subarray(data, dataEnd));
    // Chunks of fixed fields: decoders read those and skip the rest, where anything may ride;
    // VP8X's reserved bits (the two above its flags, the one below, the three bytes after) as well.
    if (type in WEBP_FIELDS) return dataEnd - data === WEBP_FIELDS[type] && (type !== 'VP8X' || ((b[data] & 0xc1) === 0 && b.readUIntLE(data + 1, 3) === 0));
    // A frame holds chunks of its own, where anything else may hide as well; its flags' six reserved bits are zeros.
    if (type !== 'ANMF') return true;
    if (dataEnd - data < 16 || (b[data + 15] & 0xfc) !== 0) return false;
    const inFrame = once();
    const frame = alphaCheck(b);
    return webpChunks(b, data + 16, dataEnd, (inner, innerData, innerEnd) => WEBP_FRAME.has(inner) && inFrame(inner) && frame.see(inner, innerData, innerEnd)) && frame.fits();
  });
  return { end, extras: extras || !top.fits(), cutShort: false };
}

/**
 * Whether every chunk between `from` and `to` is `allowed` (given its type, and where its data
 * starts and ends), and the byte that pads one of odd size to even is a zero: decoders step over
 * it unread, and it carried a byte of anything for each such chunk.
 */
function webpChunks(b: Buffer, from: number, to: number, allowed: (type: string, data: number, dataEnd: number) => boolean): boolean {
  for (let at = from; at + 8 <= to; ) {
    const size = b.readUInt32LE(at + 4);
    const dataEnd = Math.min(at + 8 + size, to);
    if (!allowed(b.toString('latin1', at, at + 4), at + 8, dataEnd)) return false;
    if ((size & 1) === 1 && at + 8 + size < to && b[at + 8 + size] !== 0) return false;
    at += 8 + size + (size & 1);
  }
  return true;
}

/**
 * Watches the chunks of one picture (the file's, or a frame's) for an ALPH chunk that decoders
 * do not read whole. One after the picture's data, or beside lossless (VP8L) data, which has an
 * alpha of its own, is not read at all: decoders take the alpha before a VP8 chunk. One stored
 * without compression (its header byte's method 0) holds one byte for each pixel of the VP8
 * picture, and libwebp takes a longer one and reads no further, so bytes after the alpha plane
 * rode along. `see` notes a chunk (and always allows it); `fits` tells whether the alpha is read
 * whole. A compressed ALPH chunk is a lossless (VP8L) bitstream, whose end is not followed here
 * (see the note on VP8 and VP8L data in docs/decisions.md).
 */
function alphaCheck(b: Buffer): { see: (type: string, data: number, dataEnd: number) => boolean; fits: () => boolean } {
  let alpha: { data: number; dataEnd: number; afterPicture: boolean } | undefined;
  let picture: { type: string; data: number; dataEnd: number } | undefined;
  return {
    see: (type, data, dataEnd) => {
      if (type === 'ALPH') alpha = { data, dataEnd, afterPicture: picture !== undefined };
      if ((type === 'VP8 ' || type === 'VP8L') && picture === undefined) picture = { type, data, dataEnd };
      return true;
    },
    fits: () => {
      if (alpha === undefined) return true;
      if (alpha.afterPicture || picture?.type !== 'VP8 ' || alpha.dataEnd === alpha.data) return false;
      if ((b[alpha.data] & 0x03) !== 0) return true;
      // The VP8 frame header: a frame tag of three bytes, a start code of three, then width and height, 14 bits each.
      if (picture.dataEnd - picture.data < 10) return false;
      const pixels = (b.readUInt16LE(picture.data + 6) & 0x3fff) * (b.readUInt16LE(picture.data + 8) & 0x3fff);
      return alpha.dataEnd - alpha.data === 1 + pixels;
    },
  };
}

/**
 * Whether a PNG's pixel data is the picture's and nothing more: the IDAT chunks' data, one
 * zlib stream, is inflated (its output counted and dropped as it comes) and must end where the
 * chunks do, having given exactly the bytes the header's size, colour type, bit depth and
 * interlacing make (a filter byte and the samples of each row of each pass). A decoder stops
 * at the picture's last row and at the stream's end, so bytes after either, in the stream or
 * after it, are no part of the picture: a script or another file could ride there. Inflating
 * stops as soon as the output is longer than the picture (a stream of gigabytes of zeros is
 * not inflated to its end). False when the data is no such stream.
 */
export async function pngPixelDataEnds(b: Buffer): Promise<boolean> {
  const expected = pngRawBytes(b);
  if (expected === null) return false;
  const stream = Buffer.concat(pngChunks(b).chunks.filter((c) => c.type === 'IDAT').map((c) => b.subarray(c.data, c.dataEnd)));
  const inflate = createInflate();
  let inflated = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      inflate.on('data', (chunk: Buffer) => {
        inflated += chunk.length;
        if (inflated > expected) {
          inflate.destroy();
          resolve();
        }
      });
      inflate.once('end', resolve);
      inflate.once('error', reject);
      inflate.end(stream);
    });
  } catch {
    return false;
  }
  // bytesWritten: the input the stream took, which stops at its end.
  return inflated === expected && inflate.bytesWritten === stream.length;
}

/** Samples per pixel by PNG colour type: grey, RGB, palette, grey and alpha, RGBA. */
const PNG_CHANNELS: Readonly<Record<number, number>> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/** The Adam7 passes: where each starts and how far apart its pixels are, across and down. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** The bytes a PNG's pixel data inflates to, from its IHDR; null when it has no readable IHDR. */
function pngRawBytes(b: Buffer): number | null {
  if (b.length < 33 || b.toString('latin1', 12, 16) !== 'IHDR') return null;
  const width = b.readUInt32BE(16);
  const height = b.readUInt32BE(20);
  const channels = PNG_CHANNELS[b[25]];
  if (channels === undefined) return null;
  const bits = b[24] * channels;
  const rows = (w: number, h: number): number => (w === 0 || h === 0 ? 0 : h * (1 + Math.ceil((w * bits) / 8)));
  if (b[28] === 0) return rows(width, height);
  let total = 0;
  for (const [x0, y0, dx, dy] of ADAM7) total += rows(Math.ceil(Math.max(0, width - x0) / dx), Math.ceil(Math.max(0, height - y0) / dy));
  return total;
}

/** The largest colour profile kept: a PNG's compressed one is inflated no further (a few bytes may inflate to gigabytes). */
export const ICC_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The tag types of ICC.1:2022 §10 and of version 2 profiles, and the private ones displays'
 * profiles carry (vcgt, ndin, mmod, MHC2): a tag's data starts with its type and four zeros.
 */
const ICC_TYPES = new Set(
  'chrm clro clrt curv data desc dict dtim fl16 fl32 fl64 gbd mAB mBA meas mft1 mft2 mluc mpet ncl2 ncol para rcs2 sf32 sig smat svcn tary text uf32 ui08 ui16 ui32 ui64 utf8 utf16 view XYZ zut8 zxml cicp bfd devs crdi scrn pseq psid vcgt ndin mmod MHC2'
    .split(' ')
    .map((type) => type.padEnd(4, ' ')),
);

/**
 * Whether the bytes are an ICC profile and nothing more (ICC.1:2022 §7): its header gives its
 * own size and the `acsp` signature, its tag table lies after the header, every tag's data lies
 * within the profile and starts with a tag type, and nothing is left between them but the few
 * bytes that align each to four. Bytes that merely sit under a profile's name (a page of HTML in
 * an APP2 segment labelled ICC_PROFILE) are no part of the picture, nor are bytes a profile does
 * not account for. A text tag (a description, a copyright) holds text, whatever it says.
 */
export function iccProfileIsWhole(p: Buffer): boolean {
  const size = p.length;
  if (size < 132 || size > ICC_MAX_BYTES || p.readUInt32BE(0) !== size || p.toString('latin1', 36, 40) !== 'acsp') return false;
  const count = p.readUInt32BE(128);
  const tableEnd = 132 + 12 * count;
  if (tableEnd > size) return false;
  const ranges: [number, number][] = [[0, tableEnd]];
  for (let i = 0; i < count; i++) {
    const offset = p.readUInt32BE(132 + 12 * i + 4);
    const length = p.readUInt32BE(132 + 12 * i + 8);
    if (offset < tableEnd || length < 8 || offset + length > size) return false;
    if (!ICC_TYPES.has(p.toString('latin1', offset, offset + 4)) || p.readUInt32BE(offset + 4) !== 0) return false;
    ranges.push([offset, offset + length]);
  }
  // Tags may share data; what lies between them is padding, less than four bytes (zeros by the
  // specification, though profiles in use end in a newline, say: nothing of any length can hide there).
  ranges.sort((a, b) => a[0] - b[0]);
  let covered = 0;
  for (const [start, end] of ranges) {
    if (start - covered > 3) return false;
    covered = Math.max(covered, end);
  }
  return size - covered <= 3;
}

/** A PNG iCCP chunk: a name of 1 to 79 bytes, a zero, compression method 0, then the profile as a zlib stream that ends with the chunk. */
function pngProfileIsWhole(chunk: Buffer): boolean {
  const nul = chunk.indexOf(0);
  if (nul < 1 || nul > 79 || chunk[nul + 1] !== 0) return false;
  const stream = chunk.subarray(nul + 2);
  try {
    const { buffer, engine } = inflateSync(stream, { maxOutputLength: ICC_MAX_BYTES, info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    // bytesWritten: the input the stream took, which stops at its end; bytes after it are no part of the profile.
    return engine.bytesWritten === stream.length && iccProfileIsWhole(buffer);
  } catch {
    // Not a zlib stream, bytes after its end, or more than a profile may be.
    return false;
  }
}

/** A marker segment of a JPEG: where its bytes start (after the marker), its marker, where its data starts (after the length) and where it ends. */
interface JpegSegment {
  start: number;
  marker: number;
  data: number;
  end: number;
}

/**
 * A JPEG's colour profile: the data of its APP2 ICC_PROFILE segments (after the name, the
 * segment's number and the count), in the order their numbers give. Null when it has none;
 * false when the segments do not make one whole profile.
 */
function jpegProfile(b: Buffer, segments: readonly JpegSegment[]): Buffer | false | null {
  const parts = segments
    .filter(({ marker, data, end }) => marker === 0xe2 && end >= data + 14 && b.toString('latin1', data, data + 12) === 'ICC_PROFILE\0')
    .map(({ data, end }) => ({ n: b[data + 12], count: b[data + 13], data: b.subarray(data + 14, end) }));
  if (parts.length === 0) return null;
  parts.sort((x, y) => x.n - y.n);
  const numbered = parts.every((part, i) => part.n === i + 1 && part.count === parts.length);
  return numbered ? Buffer.concat(parts.map((part) => part.data)) : false;
}

/**
 * APPn segments of the picture, known by their identifiers and shapes: JFIF (APP0) without a
 * thumbnail, the colour profile (APP2 ICC_PROFILE) when its segments make a whole one, Adobe's
 * colour transform (APP14 Adobe, twelve bytes). Anything else under those markers (a JFXX or
 * JFIF thumbnail, which may show what the picture was cropped from, bytes after a segment's
 * fields, a profile that is none) is an extra like any other application segment.
 */
function pictureSegment(b: Buffer, { marker, data, end }: JpegSegment, profileIsWhole: boolean): boolean {
  if (marker === 0xe0) return end - data === 14 && b.toString('latin1', data, data + 5) === 'JFIF\0' && b[data + 12] === 0 && b[data + 13] === 0;
  if (marker === 0xee) return end - data === 12 && b.toString('latin1', data, data + 5) === 'Adobe';
  return marker === 0xe2 && profileIsWhole && b.toString('latin1', data, data + 12) === 'ICC_PROFILE\0';
}

/** A JPEG's DNL segment (define number of lines), which libjpeg skips whatever it holds, at whatever length. */
const JPEG_DNL = 0xdc;

/**
 * Which of the JPEG's segments are no part of its picture: comments, application segments other
 * than the picture's own, and DNL segments: libjpeg does not take a height given after the scan
 * and skips the segment unread, so a page of HTML or a location rode in one byte for byte.
 */
function jpegExtraTest(b: Buffer, segments: readonly JpegSegment[]): (segment: JpegSegment) => boolean {
  const profile = jpegProfile(b, segments);
  const profileIsWhole = profile !== false && (profile === null || iccProfileIsWhole(profile));
  return (segment) =>
    segment.marker === 0xfe || segment.marker === JPEG_DNL || (segment.marker >= 0xe0 && segment.marker <= 0xef && !pictureSegment(b, segment, profileIsWhole));
}

/**
 * The JPEG without what is no part of its picture: comments, application segments other than
 * the picture's own (EXIF with a location, XMP, IPTC), DNL segments, fill bytes between segments and
 * anything after EOI; every other segment and the entropy-coded data byte for byte, so the
 * pixels are the same without a re-encoding. Null when the structure cannot be followed to EOI.
 */
export function jpegPictureOnly(b: Buffer): Buffer | null {
  const { segments, end } = jpegSegments(b);
  if (end === null) return null;
  const extra = jpegExtraTest(b, segments);
  const kept = segments.filter((segment) => !extra(segment)).flatMap((segment) => [Buffer.from([0xff, segment.marker]), b.subarray(segment.start, segment.end)]);
  return Buffer.concat([b.subarray(0, 2), ...kept, Buffer.from([0xff, 0xd9])]);
}

/**
 * SOI, then marker segments; after each SOS the entropy-coded data runs to the next marker
 * that is neither a stuffed 0xFF00 nor a restart marker; EOI ends the image. Comments (COM)
 * and application segments other than the picture's own are extras.
 */
function jpegStructure(b: Buffer): ImageStructure {
  const { segments, end, cutShort } = jpegSegments(b);
  return { end, extras: segments.some(jpegExtraTest(b, segments)), cutShort };
}

/** Where the next marker's 0xFF is from `from` on, as libjpeg looks for one (a stuffed 0xFF00 is none); -1 when none is. */
function nextMarker(b: Buffer, from: number): number {
  for (let at = b.indexOf(0xff, from); at >= 0; at = b.indexOf(0xff, at)) {
    while (at + 1 < b.length && b[at + 1] === 0xff) at++;
    if (at + 1 >= b.length) return -1;
    if (b[at + 1] !== 0x00) return at;
    at += 2;
  }
  return -1;
}

/**
 * A JPEG's segments after SOI, in one walk (for SOS, with its entropy-coded data), and where
 * EOI ends; `end` is null when the structure cannot be followed to it (the segments then are
 * those read before it broke off, and after it where the walk stepped over to a marker), and
 * `cutShort` says whether the bytes stop before EOI.
 */
function jpegSegments(b: Buffer): { segments: JpegSegment[]; end: number | null; cutShort: boolean } {
  const segments: JpegSegment[] = [];
  // Bytes where a marker belongs, or a length under 2: the structure breaks off there (`end`
  // is null, and the picture is re-encoded), though decoders step over it to the next marker,
  // as the walk does to tell whether the bytes reach EOI at all (`cutShort`).
  let broken = false;
  const cut = { segments, end: null, cutShort: true };
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return { segments, end: null, cutShort: false };
  let at = 2;
  while (at < b.length) {
    if (b[at] !== 0xff) {
      broken = true;
      at = nextMarker(b, at);
      if (at < 0) return cut;
    }
    while (at < b.length && b[at] === 0xff) at++; // fill bytes
    if (at >= b.length) return cut;
    const marker = b[at++];
    if (marker === 0xd9) return { segments, end: broken ? null : at, cutShort: false };
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      segments.push({ start: at, marker, data: at, end: at });
      continue; // no length
    }
    if (at + 2 > b.length) return cut;
    const length = b.readUInt16BE(at);
    if (length < 2) {
      broken = true;
      continue;
    }
    const start = at;
    at += length;
    if (marker === 0xda) {
      for (;;) {
        at = b.indexOf(0xff, at);
        if (at < 0 || at + 1 >= b.length) return cut;
        const next = b[at + 1];
        if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) at += 2;
        else if (next === 0xff) at += 1;
        else break;
      }
    }
    if (at > b.length) return cut;
    segments.push({ start, marker, data: start + 2, end: at });
  }
  return cut;
}

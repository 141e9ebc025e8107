import { createHash } from 'node:crypto';
import type { Metadata } from 'sharp';
import { formatBytes } from '../common/byte-size.js';
import { ProblemException } from '../common/problem.js';
import { SerialQueue } from '../common/serial-queue.js';
import { loadSharp } from '../common/sharp.js';
import { iccProfileIsWhole, imageStructure, jpegPictureOnly, pngAnimationFrames, pngPixelDataEnds, signedFormat } from './image-end.js';

export const IMAGE_TYPES = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp' } as const;

export interface ImageLimits {
  maxBytes: number;
  maxPixels: number;
  /** Most frames of an animation (decoding time grows with them, whatever their size); IMAGE_MAX_FRAMES by default. */
  maxFrames?: number;
}

/**
 * Most frames an animated image may have. Decoding is one image at a time per process and its
 * time grows with the frames: 100,000 frames of one pixel, 5 MB, held the decoder for 100 s.
 */
export const IMAGE_MAX_FRAMES = 1000;

/** Most pixels an image may have on a side (a panorama of a dining room is some 12,000 wide). */
export const IMAGE_MAX_SIDE = 20_000;

export interface PreparedImage {
  contentType: string;
  width: number;
  height: number;
  data: Buffer;
  sha256: string;
}

/** Why the image of a request whose connection closed while it waited was not checked. */
export const ABANDONED = 'The request was abandoned before its image was checked.';

/** Why an image was refused; the message is shown to the caller as is. */
export class ImageRejected extends Error {}

/** The limits an image is held to, as configured (IMAGE_MAX_BYTES, IMAGE_MAX_PIXELS). */
export function imageLimits(config: { IMAGE_MAX_BYTES: number; IMAGE_MAX_PIXELS: number }): ImageLimits {
  return { maxBytes: config.IMAGE_MAX_BYTES, maxPixels: config.IMAGE_MAX_PIXELS };
}

/** The message for an image over the size limit, wherever it is found out. */
export function imageTooLargeMessage(maxBytes: number): string {
  return `The image must be at most ${maxBytes} bytes (${formatBytes(maxBytes)}).`;
}

/**
 * A pixel limit as people read it, never rounded to a figure an image within it would break:
 * `40 megapixels` for whole millions, the exact count otherwise (`2,500,000 pixels`).
 */
export function pixelsAsRead(pixels: number): string {
  if (pixels % 1_000_000 === 0) return `${pixels / 1_000_000} megapixel${pixels === 1_000_000 ? '' : 's'}`;
  return `${pixels.toLocaleString('en-US')} pixel${pixels === 1 ? '' : 's'}`;
}

/**
 * Judges an image by its bytes alone: JPEG, PNG or WebP, decodable to the end, within the
 * size and pixel limits. Metadata (EXIF with its location, XMP, IPTC, comments) is not
 * kept, nor bytes after the image's end: an image that carries any is re-encoded without
 * them, with its orientation applied. `owner` (the credential) takes its turn in the process's
 * queue of decodes beside the others' (see `decodes`).
 */
export async function prepareImage(input: Buffer, limits: ImageLimits, abandoned: () => boolean = () => false, owner = ''): Promise<PreparedImage> {
  if (input.length === 0) throw new ImageRejected('The image is empty.');
  if (input.length > limits.maxBytes) {
    throw new ImageRejected(imageTooLargeMessage(limits.maxBytes));
  }
  const sharp = await loadSharp();
  let meta: Metadata;
  try {
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch {
    // A file that starts as one of the three but cannot be read is damaged, not of another kind.
    throw new ImageRejected(signedFormat(input) !== null ? 'The image is truncated or corrupt.' : 'The image must be a JPEG, PNG or WebP file.');
  }
  const contentType = IMAGE_TYPES[meta.format as keyof typeof IMAGE_TYPES];
  if (!contentType) throw new ImageRejected('The image must be a JPEG, PNG or WebP file.');
  // Only its default image would be kept: the animation stored as a still, and answered 200.
  if (meta.format === 'png' && pngAnimationFrames(input) > 1) {
    throw new ImageRejected('The image is an animated PNG (APNG), whose frames would not be kept: send an animated WebP, or a PNG of one frame.');
  }
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (!width || !height) throw new ImageRejected('The image has no dimensions.');
  // Decoding time grows with the rows (and columns) whatever the pixels: a PNG of 1 x 40,000,000
  // pixels, 78 KB, held the process's one decoder for 32 s.
  if (width > IMAGE_MAX_SIDE || height > IMAGE_MAX_SIDE) throw new ImageRejected(`The image must be at most ${IMAGE_MAX_SIDE} pixels wide and ${IMAGE_MAX_SIDE} high.`);
  // Pixels are counted by their samples' size: what decoding holds in memory. A small file may
  // declare 40 megapixels of 16-bit samples (320 MB of RGBA); such an image counts twice. An
  // animation's frames count together: a WebP of 30 frames of 36 megapixels is 1 gigapixel.
  const sampleBytes = SAMPLE_BYTES[meta.depth ?? 'uchar'] ?? 1;
  const frames = meta.pages ?? 1;
  const maxFrames = limits.maxFrames ?? IMAGE_MAX_FRAMES;
  if (frames > maxFrames) throw new ImageRejected(`The image must have at most ${maxFrames} frames.`);
  if (width * height * frames * sampleBytes > limits.maxPixels) {
    const limit = pixelsAsRead(limits.maxPixels);
    throw new ImageRejected(
      frames > 1
        ? `The image must be at most ${limit}, all its frames together.`
        : sampleBytes === 1
          ? `The image must be at most ${limit}.`
          : `The image must be at most ${limit}; one with 16-bit samples counts twice.`,
    );
  }
  const format = meta.format as keyof typeof IMAGE_TYPES;
  const animated = frames > 1;
  // One image is decoded at a time in a process, so that uploads at once do not add up their pixels in memory.
  const data = await decodes.run(async () => {
    // Its caller gone while it waited (the client closed, or the shutdown's grace ended): no
    // answer can reach anyone, and the decoder is the queue's and the shutdown's to spare.
    if (abandoned()) throw new ImageRejected(ABANDONED);
    // Decoding every pixel, of every frame, finds truncated or corrupt data that the header alone hides.
    await decodesToItsEnd(sharp, input, meta.width ?? width, meta.height ?? height, limits.maxPixels, animated);
    const carriesMetadata = Boolean(meta.exif || meta.xmp || meta.iptc || meta.comments?.length || (meta.orientation ?? 1) !== 1);
    // Nor bytes after the image's end (a page of HTML appended to a PNG, say), nor segments and
    // chunks that are no part of the picture and that libvips does not report (a JPEG comment,
    // an unknown APPn, a private PNG chunk, a WebP EXIF chunk its header does not announce).
    const structure = imageStructure(input, format);
    // A PNG whose chunks do not reach IEND, or a JPEG whose bytes stop before EOI, was cut
    // short, though its pixels may all be there (a JPEG's last bytes of scan data can be padding).
    if (structure.cutShort) throw new ImageRejected('The image is truncated or corrupt.');
    const carriesMore = structure.end !== input.length || structure.extras || (format === 'png' && !(await pngPixelDataEnds(input)));
    if (!carriesMetadata && !carriesMore) return input;
    // A JPEG that needs no turning loses what is no part of its picture segment by segment:
    // the same pixels, without a second decode of the whole picture (318 MB and 5 s for 36
    // megapixels) or a generation of JPEG loss.
    if (format === 'jpeg' && (meta.orientation ?? 1) === 1) {
      const pictureOnly = jpegPictureOnly(input);
      if (pictureOnly && (await holdsPictureOnly(pictureOnly, meta))) return pictureOnly;
    }
    if (animated && (meta.orientation ?? 1) !== 1) return turnedAnimation(input, meta, frames);
    return reencode(input, format, animated, meta.depth === 'ushort' ? ((meta.channels ?? 3) <= 2 ? 'grey16' : 'rgb16') : undefined, keepsProfile(meta), fullChroma(meta));
    // Weighed by the bytes the waiting upload holds, or by its decoding's work when that is more (see `decodes`).
  }, decodeWeight(input.length, width * height * frames * sampleBytes), owner);
  return { contentType, width, height, data, sha256: createHash('sha256').update(data).digest('hex') };
}

/**
 * Decodes every pixel of the image and throws when its data is cut short or damaged. What is
 * decoded is shrunk on load to an eighth (JPEG's scaled DCT, WebP's scaled output): every
 * byte of the compressed data is still read and checked, but a 36-megapixel WebP held 338 MB
 * and 3 s of CPU decoded whole, 67 MB and 0.4 s so. A JPEG whose scan stops before its last
 * block (an end marker early: a header claiming 6000 × 6000 pixels over 300 bytes) is only a
 * warning to libjpeg, which fills the rest with grey; here it is a truncated image.
 */
async function decodesToItsEnd(sharp: Awaited<ReturnType<typeof loadSharp>>, input: Buffer, width: number, height: number, maxPixels: number, animated: boolean): Promise<void> {
  const warnings: string[] = [];
  try {
    const image = sharp(input, { failOn: 'truncated', limitInputPixels: maxPixels, animated });
    image.on('warning', (warning: string) => warnings.push(warning));
    await image.resize({ width: Math.ceil(width / 8), height: Math.ceil(height / 8), fit: 'fill', kernel: 'nearest' }).raw().toBuffer();
  } catch {
    throw new ImageRejected('The image is truncated or corrupt.');
  }
  if (warnings.some((warning) => DATA_CUT_SHORT.test(warning))) throw new ImageRejected('The image is truncated or corrupt.');
}

/** libjpeg's warning for a scan that ends before the picture does (JWRN_HIT_MARKER). */
const DATA_CUT_SHORT = /premature end of data segment/i;

/** Bytes of one sample, by libvips' band format (sharp's `depth`). */
const SAMPLE_BYTES: Readonly<Record<string, number>> = { uchar: 1, char: 1, ushort: 2, short: 2, uint: 4, int: 4, float: 4, double: 8, complex: 8, dpcomplex: 16 };

/**
 * Decodes run one at a time in this process (each holds up to IMAGE_MAX_PIXELS of raw pixels).
 * Each waiting upload holds its body and its client: past 40 MiB of images waiting (eight of
 * 5 MiB), a client is told to come back (503, Retry-After) rather than kept waiting minutes
 * behind the others. Credentials take turns, and one holds at most half of it: a credential
 * sending 40-megapixel PNGs of one colour (39 KB each, a second of decoding) from 16
 * connections kept another's 16 KB JPEG waiting 8 to 10 s when they ran in the order they
 * came. An image weighs its bytes, or its decoding's work when that weighs more
 * (DECODED_SAMPLES_PER_BYTE): a PNG of 40 megapixels in one colour is some 100 KB, and takes
 * a second to decode, as long as a JPEG of 5 MiB.
 */
const decodes = new SerialQueue(40 * 1024 * 1024, () => new ProblemException(503, 'The service is checking as many images as it can at once; retry after the time in Retry-After.', { headers: { 'Retry-After': '5' } }));

/** Samples decoded that weigh as a byte of file in the queue: the default limits' largest image, 40 megapixels, as 5 MB. */
const DECODED_SAMPLES_PER_BYTE = 8;

/** What an image weighs in the queue of decodes: its bytes, or its samples decoded (pixels of all frames, by sample size) when they weigh more. */
export function decodeWeight(bytes: number, samples: number): number {
  return Math.max(bytes, Math.ceil(samples / DECODED_SAMPLES_PER_BYTE));
}

/** Whether a JPEG taken apart and put together again reads as the same picture and carries no metadata. */
async function holdsPictureOnly(jpeg: Buffer, original: Metadata): Promise<boolean> {
  const sharp = await loadSharp();
  const meta = await sharp(jpeg)
    .metadata()
    .catch(() => null);
  return meta !== null && meta.format === 'jpeg' && meta.width === original.width && meta.height === original.height && !meta.exif && !meta.xmp && !meta.iptc && !meta.comments?.length;
}

/**
 * How each EXIF orientation (2 to 8) is undone, in sharp's operations: a turn, then a mirror
 * across (flop) or down (flip), as sharp's own autoOrient turns a single picture.
 */
const ORIENTATIONS: Readonly<Record<number, { angle: number; mirror?: 'flip' | 'flop' }>> = {
  2: { angle: 0, mirror: 'flop' },
  3: { angle: 180 },
  4: { angle: 0, mirror: 'flip' },
  5: { angle: 270, mirror: 'flop' },
  6: { angle: 90 },
  7: { angle: 90, mirror: 'flop' },
  8: { angle: 270 },
};

/**
 * An animation with an orientation, each frame turned on its own, its timing and loop kept.
 * libvips turns an animation as one tall strip of frames: a quarter turn is refused (it was a
 * 500) and a half turn or a flip down plays the frames backwards, under the first frame's delays.
 */
async function turnedAnimation(input: Buffer, meta: Metadata, frames: number): Promise<Buffer> {
  const sharp = await loadSharp();
  const { data, info } = await sharp(input, { failOn: 'truncated', animated: true }).raw().toBuffer({ resolveWithObject: true });
  const { angle, mirror } = ORIENTATIONS[meta.orientation ?? 1] ?? { angle: 0 };
  const count = info.pages ?? frames;
  const frameBytes = data.length / count;
  const raw = { width: info.width, height: info.height / count, channels: info.channels };
  // Each turned frame takes its own place in the decoded strip (a turn keeps a frame's bytes):
  // the animation is held once, and one frame more.
  let size = { width: raw.width, height: raw.height };
  for (let i = 0; i < count; i++) {
    let frame = sharp(data.subarray(i * frameBytes, (i + 1) * frameBytes), { raw });
    if (angle !== 0) frame = frame.rotate(angle);
    if (mirror === 'flip') frame = frame.flip();
    if (mirror === 'flop') frame = frame.flop();
    const out = await frame.raw().toBuffer({ resolveWithObject: true });
    out.data.copy(data, i * frameBytes);
    size = { width: out.info.width, height: out.info.height };
  }
  const strip = sharp(data, { raw: { ...size, height: size.height * count, channels: info.channels, pageHeight: size.height } });
  const timing = { loop: meta.loop ?? 0, ...(meta.delay ? { delay: meta.delay } : {}) };
  return strip.webp(input.includes('VP8L', 12, 'latin1') ? { ...timing, lossless: true } : { ...timing, quality: 92 }).toBuffer();
}

/**
 * Whether a re-encoding keeps the image's colour profile, with its pixels as they are: an RGB
 * profile that is whole (see iccProfileIsWhole). Without it sharp converts the pixels to sRGB
 * and drops the profile, and a wide-gamut photo (a phone's Display P3, turned or carrying EXIF)
 * lost every colour sRGB cannot show, where the same photo without metadata is kept whole.
 */
function keepsProfile(meta: Metadata): boolean {
  // The picture's own samples RGB too: a grey or CMYK picture under an RGB profile is converted as before.
  const rgb = meta.space === 'srgb' || meta.space === 'rgb16' || meta.space === 'rgb';
  return rgb && meta.icc !== undefined && meta.icc.toString('latin1', 16, 20) === 'RGB ' && iccProfileIsWhole(meta.icc);
}

/** Whether a JPEG's colour is sampled at every pixel (4:4:4, or 4:4:4:4 in CMYK), which a re-encoding keeps. */
function fullChroma(meta: Metadata): boolean {
  return meta.format === 'jpeg' && (meta.chromaSubsampling ?? '').startsWith('4:4:4');
}

/** The image without what it carried beyond its picture; an animation keeps its frames, an RGB profile its colours (see keepsProfile), a JPEG its chroma resolution. */
async function reencode(
  input: Buffer,
  format: keyof typeof IMAGE_TYPES,
  animated: boolean,
  sixteenBits?: 'grey16' | 'rgb16',
  keepProfile = false,
  keepChroma = false,
): Promise<Buffer> {
  const sharp = await loadSharp();
  const turned = sharp(input, { failOn: 'truncated', animated }).autoOrient();
  const image = keepProfile ? turned.keepIccProfile() : turned;
  // A JPEG of full colour resolution keeps it (sharp writes 4:2:0 unless told, halving it across and down).
  if (format === 'jpeg') return image.jpeg({ quality: 92, mozjpeg: false, chromaSubsampling: keepChroma ? '4:4:4' : '4:2:0' }).toBuffer();
  // A PNG of 16-bit samples keeps them (sharp writes 8 bits unless told the colour space).
  if (format === 'png') return (sixteenBits ? image.toColourspace(sixteenBits) : image).png().toBuffer();
  // A lossless WebP (VP8L data, in a frame or alone) stays lossless: its pixels are not changed.
  return image.webp(input.includes('VP8L', 12, 'latin1') ? { lossless: true } : { quality: 92 }).toBuffer();
}

import sharp from 'sharp';
import {
  animatedWebp,
  jpegWith,
  jpegWithLocation,
  makeImage,
  pngOfSize,
  pngWith,
  pngWithExtraPixelData,
  pngWithinInflatedData,
  pngWithinPixelData,
  webpWith,
  webpWithinFrame,
} from '../../test/helpers/images.js';
import { imageStructure, pngPixelDataEnds } from './image-end.js';

const imageEnd = (bytes: Buffer, format: 'jpeg' | 'png' | 'webp'): number | null => imageStructure(bytes, format).end;

const HTML = Buffer.from('<html><script>alert(1)</script></html>', 'latin1');

describe('imageEnd', () => {
  const formats = ['jpeg', 'png', 'webp'] as const;

  it.each(formats)('finds the end of a whole %s at its last byte, and before anything appended to it', async (format) => {
    const image = await makeImage(format, 37, 23);
    expect(imageEnd(image, format)).toBe(image.length);
    expect(imageEnd(Buffer.concat([image, HTML]), format)).toBe(image.length);
    expect(imageEnd(Buffer.concat([image, Buffer.alloc(1000)]), format)).toBe(image.length);
  });

  it('gives null for a PNG with a chunk whose CRC fails, in its header, its pixel data or its end', async () => {
    const image = await makeImage('png', 37, 23);
    // IHDR's CRC sits at 29; the last chunk (IEND) ends the file with its CRC.
    for (const at of [29, 8 + 8 + 2, image.length - 1, image.length - 20]) {
      const broken = Buffer.from(image);
      broken[at] ^= 0x01;
      expect([at, imageEnd(broken, 'png')]).toEqual([at, null]);
    }
  });

  it.each(formats)('gives null for a truncated %s', async (format) => {
    const image = await makeImage(format, 37, 23);
    expect(imageEnd(image.subarray(0, image.length - 3), format)).toBeNull();
    expect(imageEnd(image.subarray(0, 5), format)).toBeNull();
  });

  it('follows every scan of a progressive JPEG, EXIF segments and ancillary PNG chunks', async () => {
    const progressive = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#16a085' } })
      .jpeg({ progressive: true })
      .toBuffer();
    expect(imageEnd(progressive, 'jpeg')).toBe(progressive.length);
    expect(imageEnd(Buffer.concat([progressive, progressive]), 'jpeg')).toBe(progressive.length);
    const exif = await jpegWithLocation();
    expect(imageEnd(exif, 'jpeg')).toBe(exif.length);
    const padded = await pngOfSize(5000);
    expect(imageEnd(padded, 'png')).toBe(5000);
  });

  it('gives null for bytes that are not the format at all', () => {
    for (const format of formats) expect(imageEnd(HTML, format)).toBeNull();
    expect(imageEnd(Buffer.from([0xff, 0xd8, 0x00, 0x00]), 'jpeg')).toBeNull();
  });
});

describe('imageStructure', () => {
  it('finds nothing but the picture in what sharp encodes, a colour profile included', async () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      const image = await makeImage(format, 37, 23);
      expect({ format, ...imageStructure(image, format) }).toEqual({ format, end: image.length, extras: false });
      const profiled = await sharp(image).withIccProfile('p3').toFormat(format).toBuffer();
      expect({ format, extras: imageStructure(profiled, format).extras }).toEqual({ format, extras: false });
    }
  });

  it('finds a JPEG comment and application segments other than JFIF, ICC and Adobe', async () => {
    const jpeg = await makeImage('jpeg', 37, 23);
    expect(imageStructure(jpegWith(jpeg, 0xfe, HTML), 'jpeg')).toEqual({ end: jpeg.length + HTML.length + 4, extras: true });
    expect(imageStructure(jpegWith(jpeg, 0xe3, Buffer.from('Exif\0\0GPS')), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xef, HTML), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xe2, Buffer.from('not a profile')), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xe2, Buffer.from('ICC_PROFILE\0\x01\x01')), 'jpeg').extras).toBe(false);
    // APP0 and APP14 are the picture's only under their own identifiers: JFIF, Adobe.
    expect(imageStructure(jpegWith(jpeg, 0xe0, HTML), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xe0, Buffer.from('JFXX\0\x10thumbnail')), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xee, HTML), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xee, Buffer.from('Adobe\0\x64\0\0\0\0\x01')), 'jpeg').extras).toBe(false);
  });

  it('finds a private PNG chunk and a WebP chunk that is no part of the picture', async () => {
    const png = await makeImage('png', 37, 23);
    expect(imageStructure(pngWith(png, 'htMl', HTML), 'png').extras).toBe(true);
    expect(imageStructure(pngWith(png, 'pHYs', Buffer.alloc(9)), 'png').extras).toBe(false);
    const webp = await makeImage('webp', 37, 23);
    const withExif = webpWith(webp, 'EXIF', HTML);
    expect(imageStructure(withExif, 'webp')).toEqual({ end: withExif.length, extras: true });
    expect(imageStructure(webpWith(webp, 'XMP ', HTML), 'webp').extras).toBe(true);
  });

  it("finds a chunk inside an animation frame other than the frame's picture", async () => {
    const animation = await animatedWebp(3);
    expect(imageStructure(animation, 'webp')).toEqual({ end: animation.length, extras: false });
    const hidden = webpWithinFrame(animation, 'XYZW', HTML);
    expect(imageStructure(hidden, 'webp')).toEqual({ end: hidden.length, extras: true });
    expect(imageStructure(webpWithinFrame(animation, 'ALPH', Buffer.alloc(4)), 'webp').extras).toBe(false);
  });
});

describe('pngPixelDataEnds', () => {
  it('holds for what sharp encodes, interlaced and 16-bit included, and for a PNG whose data spans IDAT chunks', async () => {
    const plain = await makeImage('png', 37, 23);
    const interlaced = await sharp(plain).png({ progressive: true }).toBuffer();
    const deep = await sharp(plain).png().toColourspace('rgb16').toBuffer();
    const noisy = await sharp(Buffer.from(Array.from({ length: 300 * 300 * 3 }, (_, i) => (i * 7919) % 251)), { raw: { width: 300, height: 300, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    expect(noisy.length).toBeGreaterThan(200_000);
    for (const png of [plain, interlaced, deep, noisy]) expect(await pngPixelDataEnds(png)).toBe(true);
  });

  it('holds for palette and 1-bit images, whose rows are shorter than their pixels', async () => {
    const palette = await sharp(await makeImage('png', 37, 23)).png({ palette: true, colours: 4 }).toBuffer();
    const oneBit = await sharp({ create: { width: 13, height: 7, channels: 3, background: '#000' } }).greyscale().png({ palette: true, colours: 2 }).toBuffer();
    for (const png of [palette, oneBit]) expect(await pngPixelDataEnds(png)).toBe(true);
  });

  it('fails for bytes inside the zlib stream after the last row, a few or 64 MB of them', async () => {
    const png = await makeImage('png', 37, 23);
    expect(await pngPixelDataEnds(pngWithinInflatedData(png, HTML))).toBe(false);
    expect(await pngPixelDataEnds(pngWithinInflatedData(png, Buffer.alloc(64 * 1024 * 1024)))).toBe(false);
  });

  it('fails for bytes after the zlib stream, in its IDAT chunk or in one more', async () => {
    const png = await makeImage('png', 37, 23);
    expect(await pngPixelDataEnds(pngWithinPixelData(png, HTML))).toBe(false);
    expect(await pngPixelDataEnds(pngWithExtraPixelData(png, HTML))).toBe(false);
    // Both still decode: the picture is whole, what rides after it is what must not be stored.
    for (const carrier of [pngWithinPixelData(png, HTML), pngWithExtraPixelData(png, HTML)]) {
      expect((await sharp(carrier, { failOn: 'truncated' }).raw().toBuffer()).length).toBe(37 * 23 * 3);
    }
  });
});

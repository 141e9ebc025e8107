import sharp from 'sharp';
import {
  animatedWebp,
  jpegWith,
  jpegWithLocation,
  makeImage,
  pngChunk,
  pngOfSize,
  pngWith,
  pngWithBefore,
  pngWithExtraPixelData,
  pngWithinInflatedData,
  pngWithinPixelData,
  webpWith,
  webpWithinFrame,
} from '../../test/helpers/images.js';
import { deflateSync } from 'node:zlib';
import { iccProfileIsWhole, imageStructure, pngPixelDataEnds } from './image-end.js';

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
    const padded = pngOfSize(5000);
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
      expect({ format, ...imageStructure(image, format) }).toEqual({ format, end: image.length, extras: false, cutShort: false });
      const profiled = await sharp(image).withIccProfile('p3').toFormat(format).toBuffer();
      expect({ format, extras: imageStructure(profiled, format).extras }).toEqual({ format, extras: false });
    }
  });

  it('tells bytes that stop before the image ends from a structure that breaks off', async () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      const image = await makeImage(format, 37, 23);
      for (const cut of [image.length - 1, image.length - 2, Math.floor(image.length / 2)]) {
        expect({ format, cut, cutShort: imageStructure(image.subarray(0, cut), format).cutShort }).toEqual({ format, cut, cutShort: true });
      }
    }
    // A JPEG holding bytes where a marker belongs may still decode: it is broken off, not cut short.
    const jpeg = await makeImage('jpeg', 37, 23);
    const strayed = Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0x00]), jpeg.subarray(2)]);
    expect(imageStructure(strayed, 'jpeg')).toEqual({ end: null, extras: false, cutShort: false });
    // Stepped over to the next marker (not a stuffed 0xFF00 in the picture's data), the walk still finds where the bytes stop.
    expect(imageStructure(strayed.subarray(0, -2), 'jpeg')).toEqual({ end: null, extras: false, cutShort: true });
    const stuffed = Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0x00, 0xff, 0x00, 0x00]), jpeg.subarray(2)]);
    expect(imageStructure(stuffed, 'jpeg')).toEqual({ end: null, extras: false, cutShort: false });
  });

  it('finds a JPEG comment and application segments other than JFIF, ICC and Adobe', async () => {
    const jpeg = await makeImage('jpeg', 37, 23);
    expect(imageStructure(jpegWith(jpeg, 0xfe, HTML), 'jpeg')).toEqual({ end: jpeg.length + HTML.length + 4, extras: true, cutShort: false });
    expect(imageStructure(jpegWith(jpeg, 0xe3, Buffer.from('Exif\0\0GPS')), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xef, HTML), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xe2, Buffer.from('not a profile')), 'jpeg').extras).toBe(true);
    // A profile's name over bytes that are no profile: an extra (see the colour profile tests).
    expect(imageStructure(jpegWith(jpeg, 0xe2, Buffer.from('ICC_PROFILE\0\x01\x01')), 'jpeg').extras).toBe(true);
    // APP0 and APP14 are the picture's only under their own identifiers: JFIF, Adobe.
    expect(imageStructure(jpegWith(jpeg, 0xe0, HTML), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xe0, Buffer.from('JFXX\0\x10thumbnail')), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xee, HTML), 'jpeg').extras).toBe(true);
    expect(imageStructure(jpegWith(jpeg, 0xee, Buffer.from('Adobe\0\x64\0\0\0\0\x01')), 'jpeg').extras).toBe(false);
  });

  describe('colour profiles and the segments JPEG keeps', () => {
    /** A real profile, as an encoder embeds it. */
    let profile: Buffer;
    beforeAll(async () => {
      profile = (await sharp(await makeImage('jpeg', 8, 8)).withIccProfile('p3').jpeg().toBuffer().then((b) => sharp(b).metadata())).icc!;
    });
    const iccSegment = (n: number, count: number, data: Buffer): Buffer => Buffer.concat([Buffer.from('ICC_PROFILE\0', 'latin1'), Buffer.from([n, count]), data]);
    /** The profile with bytes after its end, its size field counting them. */
    const grown = (extra: Buffer): Buffer => {
      const out = Buffer.concat([profile, extra]);
      out.writeUInt32BE(out.length, 0);
      return out;
    };

    it('takes an ICC profile as whole only when its header, tag table and tags account for every byte', () => {
      expect(profile.length).toBeGreaterThan(132);
      expect(iccProfileIsWhole(profile)).toBe(true);
      // Up to three bytes align the end (a newline, in profiles in use); more are no part of the profile.
      expect(iccProfileIsWhole(grown(Buffer.alloc(3)))).toBe(true);
      expect(iccProfileIsWhole(grown(Buffer.from('\n')))).toBe(true);
      expect(iccProfileIsWhole(grown(Buffer.alloc(4)))).toBe(false);
      expect(iccProfileIsWhole(grown(HTML))).toBe(false);
      expect(iccProfileIsWhole(Buffer.concat([profile, HTML]))).toBe(false);
      expect(iccProfileIsWhole(HTML)).toBe(false);
      const unsigned = Buffer.from(profile);
      unsigned.write('xxxx', 36, 'latin1');
      expect(iccProfileIsWhole(unsigned)).toBe(false);
      // A tag whose data runs past the end.
      const overrun = Buffer.from(profile);
      overrun.writeUInt32BE(profile.length, 132 + 8);
      expect(iccProfileIsWhole(overrun)).toBe(false);
      // A profile's layout around a tag that is no tag type: a page of HTML under a made-up tag.
      const page = Buffer.from('<html><script>alert(1)</script></html>'.padEnd(64, ' '), 'latin1');
      const forged = Buffer.alloc(144 + page.length);
      forged.writeUInt32BE(forged.length, 0);
      forged.write('acsp', 36, 'latin1');
      forged.writeUInt32BE(1, 128);
      forged.write('zzzz', 132, 'latin1');
      forged.writeUInt32BE(144, 136);
      forged.writeUInt32BE(page.length, 140);
      page.copy(forged, 144);
      expect(iccProfileIsWhole(forged)).toBe(false);
      // The same with a text type before the page: text in a text tag, as any profile may hold.
      Buffer.concat([Buffer.from('text\0\0\0\0', 'latin1'), page.subarray(8)]).copy(forged, 144);
      expect(iccProfileIsWhole(forged)).toBe(true);
    });

    it('keeps a JPEG profile, whole in one segment or in numbered parts, and finds one that is none', async () => {
      const jpeg = await makeImage('jpeg', 37, 23);
      expect(imageStructure(jpegWith(jpeg, 0xe2, iccSegment(1, 1, profile)), 'jpeg').extras).toBe(false);
      const half = profile.length >> 1;
      const split = jpegWith(jpegWith(jpeg, 0xe2, iccSegment(2, 2, profile.subarray(half))), 0xe2, iccSegment(1, 2, profile.subarray(0, half)));
      expect(imageStructure(split, 'jpeg').extras).toBe(false);
      // Parts that do not make the profile: one missing, or numbered wrong.
      expect(imageStructure(jpegWith(jpeg, 0xe2, iccSegment(1, 2, profile.subarray(0, half))), 'jpeg').extras).toBe(true);
      expect(imageStructure(jpegWith(jpegWith(jpeg, 0xe2, iccSegment(1, 2, profile.subarray(half))), 0xe2, iccSegment(1, 2, profile.subarray(0, half))), 'jpeg').extras).toBe(true);
      expect(imageStructure(jpegWith(jpeg, 0xe2, iccSegment(1, 1, HTML)), 'jpeg').extras).toBe(true);
      expect(imageStructure(jpegWith(jpeg, 0xe2, iccSegment(1, 1, grown(HTML))), 'jpeg').extras).toBe(true);
      // A profile as what sharp encodes in several segments (a CMYK profile is over 64 KB).
      const cmyk = await sharp(jpeg).withIccProfile('cmyk').jpeg().toBuffer();
      expect((await sharp(cmyk).metadata()).icc!.length).toBeGreaterThan(65_519);
      expect(imageStructure(cmyk, 'jpeg').extras).toBe(false);
    });

    it('keeps JFIF without a thumbnail and Adobe at their sizes, and finds bytes after their fields or a thumbnail', async () => {
      const jpeg = await makeImage('jpeg', 37, 23);
      const jfif = Buffer.from('JFIF\0\x01\x01\0\0\x01\0\x01\0\0', 'latin1');
      expect(imageStructure(jpegWith(jpeg, 0xe0, jfif), 'jpeg').extras).toBe(false);
      expect(imageStructure(jpegWith(jpeg, 0xe0, Buffer.concat([jfif, HTML])), 'jpeg').extras).toBe(true);
      const thumbnail = Buffer.concat([jfif.subarray(0, 12), Buffer.from([1, 1]), Buffer.from('abc')]);
      expect(imageStructure(jpegWith(jpeg, 0xe0, thumbnail), 'jpeg').extras).toBe(true);
      const adobe = Buffer.from('Adobe\0\x64\0\0\0\0\x01', 'latin1');
      expect(imageStructure(jpegWith(jpeg, 0xee, Buffer.concat([adobe, HTML])), 'jpeg').extras).toBe(true);
    });

    it('keeps a PNG iCCP and a WebP ICCP chunk that hold a profile, and finds one that holds anything else', async () => {
      const png = await makeImage('png', 37, 23);
      const iccp = (data: Buffer): Buffer => Buffer.concat([Buffer.from('icc\0\0', 'latin1'), deflateSync(data)]);
      const withProfile = (image: Buffer, data: Buffer): Buffer => pngWithBefore(image, 'IDAT', 'iCCP', data);
      expect(imageStructure(withProfile(png, iccp(profile)), 'png').extras).toBe(false);
      expect(imageStructure(withProfile(png, iccp(HTML)), 'png').extras).toBe(true);
      expect(imageStructure(withProfile(png, Buffer.concat([iccp(profile), HTML])), 'png').extras).toBe(true);
      // A few hundred KB that inflate to 200 MB of zeros: inflated no further than a profile may be.
      expect(imageStructure(withProfile(png, iccp(Buffer.alloc(200 * 1024 * 1024))), 'png').extras).toBe(true);
      // One profile at most: each is inflated, and a thousand would hold the process for seconds.
      expect(imageStructure(withProfile(withProfile(png, iccp(profile)), iccp(profile)), 'png').extras).toBe(true);
      // After the pixel data, where libpng does not read it.
      expect(imageStructure(pngWith(png, 'iCCP', iccp(profile)), 'png').extras).toBe(true);
      const webp = await makeImage('webp', 37, 23);
      expect(imageStructure(webpWith(webp, 'ICCP', profile), 'webp').extras).toBe(false);
      expect(imageStructure(webpWith(webpWith(webp, 'ICCP', profile), 'ICCP', profile), 'webp').extras).toBe(true);
      expect(imageStructure(webpWith(webp, 'ICCP', HTML), 'webp').extras).toBe(true);
    });
  });

  it('finds a private PNG chunk and a WebP chunk that is no part of the picture', async () => {
    const png = await makeImage('png', 37, 23);
    expect(imageStructure(pngWith(png, 'htMl', HTML), 'png').extras).toBe(true);
    expect(imageStructure(pngWithBefore(png, 'IDAT', 'gAMA', Buffer.from([0, 0, 0xb1, 0x8f])), 'png').extras).toBe(false);
    // After the pixel data, libpng skips it unread: it is out of place, and an extra.
    expect(imageStructure(pngWith(png, 'gAMA', Buffer.from([0, 0, 0xb1, 0x8f])), 'png').extras).toBe(true);
    // sharp's PNG has a pHYs already: a second one is skipped by decoders, and is an extra.
    expect(imageStructure(pngWithBefore(png, 'IDAT', 'pHYs', Buffer.alloc(9)), 'png').extras).toBe(true);
    const webp = await makeImage('webp', 37, 23);
    const withExif = webpWith(webp, 'EXIF', HTML);
    expect(imageStructure(withExif, 'webp')).toEqual({ end: withExif.length, extras: true, cutShort: false });
    expect(imageStructure(webpWith(webp, 'XMP ', HTML), 'webp').extras).toBe(true);
  });

  it('follows a PNG of some 400,000 chunks, each of its own type, at once (not in minutes, the process held up)', async () => {
    const png = await makeImage('png', 8, 8);
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const types = Array.from({ length: 26 * 26 * 26 * 24 }, (_, i) => `${letters[i % 26]}${letters[Math.floor(i / 26) % 26]}${letters[Math.floor(i / 676) % 26]}${letters[Math.floor(i / 17_576)]}`);
    const many = Buffer.concat([png.subarray(0, png.length - 12), ...types.map((type) => pngChunk(type, Buffer.alloc(0))), png.subarray(png.length - 12)]);
    expect(many.length).toBeLessThanOrEqual(5 * 1024 * 1024);
    const started = Date.now();
    expect(imageStructure(many, 'png')).toEqual({ end: many.length, extras: true, cutShort: false });
    // Well under a second here when idle, seconds on a loaded machine; the quadratic walk this
    // guards against took minutes.
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it("finds a chunk inside an animation frame other than the frame's picture", async () => {
    const animation = await animatedWebp(3);
    expect(imageStructure(animation, 'webp')).toEqual({ end: animation.length, extras: false, cutShort: false });
    const hidden = webpWithinFrame(animation, 'XYZW', HTML);
    expect(imageStructure(hidden, 'webp')).toEqual({ end: hidden.length, extras: true, cutShort: false });
    // An alpha chunk beside lossless data, which has its own, is not read by decoders.
    expect(imageStructure(webpWithinFrame(animation, 'ALPH', Buffer.alloc(4)), 'webp').extras).toBe(true);
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

import { readFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import sharp, { type CreateRaw } from 'sharp';
import { animatedPng, animatedWebp, jpegWith, jpegWithLocation, makeImage, pngOfSize, pngWith, pngWithBefore, pngWithExtraPixelData, pngWithinInflatedData, pngWithinPixelData, webpChunkGrown, webpChunkReplaced, webpPaddedWith, webpWith, webpWithinFrame } from '../../test/helpers/images.js';
import { ABANDONED, decodeWeight, ImageRejected, pixelsAsRead, prepareImage } from './image-inspector.js';

const HTML = Buffer.from('<html><script>alert(document.domain)</script></html>', 'latin1');
const limits = { maxBytes: 1_000_000, maxPixels: 1_000_000 };

describe('pixelsAsRead', () => {
  it('names a whole number of megapixels as such, and any other limit exactly, never rounded', () => {
    expect([40_000_000, 1_000_000, 2_500_000, 999_999, 1000, 1].map(pixelsAsRead)).toEqual([
      '40 megapixels',
      '1 megapixel',
      '2,500,000 pixels',
      '999,999 pixels',
      '1,000 pixels',
      '1 pixel',
    ]);
  });
});

describe('decodeWeight', () => {
  it('weighs an image waiting to be decoded by its bytes, or by its decoding when that is more', () => {
    // A PNG of 40 megapixels in one colour is some 100 KB: it weighs as 5 MB, the largest JPEG the defaults take.
    expect(decodeWeight(100_000, 40_000_000)).toBe(5_000_000);
    expect(decodeWeight(5_242_880, 12_000_000)).toBe(5_242_880);
    // Eight such PNGs fill the 40 MiB of images that may wait; a ninth is told to come back (503).
    expect(8 * decodeWeight(100_000, 40_000_000)).toBeLessThanOrEqual(40 * 1024 * 1024);
    expect(9 * decodeWeight(100_000, 40_000_000)).toBeGreaterThan(40 * 1024 * 1024);
  });
});

describe('prepareImage', () => {
  it('re-encodes a PNG carrying bytes after its pixel data, inside its zlib stream, after it or in one more IDAT, to the same picture', async () => {
    const png = await makeImage('png', 37, 23);
    const pixels = await sharp(png).raw().toBuffer();
    for (const carrier of [pngWithinPixelData(png, HTML), pngWithExtraPixelData(png, HTML), pngWithinInflatedData(png, HTML)]) {
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.includes(HTML)).toBe(false);
      expect(prepared).toMatchObject({ contentType: 'image/png', width: 37, height: 23 });
      expect((await sharp(prepared.data).raw().toBuffer()).equals(pixels)).toBe(true);
    }
    expect((await prepareImage(png, limits)).data).toBe(png);
  });

  it('takes out of a JPEG a DNL segment, which decoders skip whatever it holds, keeping every other byte', async () => {
    const jpeg = await makeImage('jpeg', 37, 23);
    const carrier = jpegWith(jpeg, 0xdc, Buffer.concat([HTML, Buffer.from(' GPS 51.5074N 0.1278W', 'latin1')]));
    expect(await sharp(carrier).metadata()).toMatchObject({ format: 'jpeg', width: 37, height: 23 });
    const prepared = await prepareImage(carrier, limits);
    expect(prepared.data.includes(HTML)).toBe(false);
    expect(prepared.data.equals(jpeg)).toBe(true);
  });

  it('re-encodes a WebP whose VP8X or ANIM chunk is longer than its fields or comes twice, which decoders skip, the frames kept', async () => {
    const animation = await animatedWebp(3);
    for (const type of ['VP8X', 'ANIM']) {
      const carrier = webpChunkGrown(animation, type, HTML);
      expect((await sharp(carrier).metadata()).pages).toBe(3);
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.includes(HTML)).toBe(false);
      expect(prepared).toMatchObject({ contentType: 'image/webp', width: 32, height: 32 });
      expect((await sharp(prepared.data).metadata()).pages).toBe(3);
    }
    // A second ANIM, of the right length, is skipped by decoders as well.
    const twice = webpWith(animation, 'ANIM', Buffer.from('<scrip', 'latin1'));
    expect((await sharp(twice).metadata()).pages).toBe(3);
    expect((await prepareImage(twice, limits)).data.includes(Buffer.from('<scrip'))).toBe(false);
    expect((await prepareImage(animation, limits)).data).toBe(animation);
  });

  it('re-encodes a PNG whose chunk of fixed fields is longer than them or comes twice, which libpng skips, and keeps one of the right length', async () => {
    const encoded = await makeImage('png', 37, 23);
    // sharp writes a pHYs after IHDR: without it, each chunk below is the image's one of its type.
    expect(encoded.toString('latin1', 37, 41)).toBe('pHYs');
    const png = Buffer.concat([encoded.subarray(0, 33), encoded.subarray(33 + 21)]);
    const pixels = await sharp(png).raw().toBuffer();
    // An RGB image's fields: pHYs 9 bytes, gAMA 4, sRGB 1, cHRM 32, sBIT and tRNS one per channel, bKGD two per channel.
    const fields: Record<string, Buffer> = {
      pHYs: Buffer.from([0, 0, 0x0b, 0x13, 0, 0, 0x0b, 0x13, 1]),
      gAMA: Buffer.from([0, 0, 0xb1, 0x8f]),
      sRGB: Buffer.from([0]),
      cHRM: Buffer.alloc(32, 1),
      sBIT: Buffer.from([8, 8, 8]),
      bKGD: Buffer.from([0, 1, 0, 2, 0, 3]),
      tRNS: Buffer.from([0, 1, 0, 2, 0, 3]),
    };
    for (const [type, data] of Object.entries(fields)) {
      const kept = pngWithBefore(png, 'IDAT', type, data);
      expect((await prepareImage(kept, limits)).data).toBe(kept);
      const prepared = await prepareImage(pngWithBefore(png, 'IDAT', type, Buffer.concat([data, HTML])), limits);
      expect([type, prepared.data.includes(HTML)]).toEqual([type, false]);
      expect((await sharp(prepared.data).raw().toBuffer()).subarray(0, 3).equals(pixels.subarray(0, 3))).toBe(true);
    }
    // Each once: libpng skips a second one unread, so any number of them could carry 9 bytes each.
    const twice = pngWithBefore(pngWithBefore(png, 'IDAT', 'pHYs', fields.pHYs), 'IDAT', 'pHYs', Buffer.from('<script>;', 'latin1'));
    expect((await prepareImage(twice, limits)).data.includes(Buffer.from('<script>'))).toBe(false);
    // A palette image's transparency holds one value for each entry at most.
    const palette = await sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 10, g: 20, b: 30, alpha: 0.5 } } }).png({ palette: true }).toBuffer();
    expect((await prepareImage(palette, limits)).data).toBe(palette);
  });

  it('re-encodes a PNG whose chunk of the picture is out of place, which libpng skips unread: after the pixel data, or a colour chunk after the palette', async () => {
    const encoded = await makeImage('png', 37, 23);
    const png = Buffer.concat([encoded.subarray(0, 33), encoded.subarray(33 + 21)]);
    const pixels = await sharp(png).raw().toBuffer();
    const marker = Buffer.from('<script>alert(1)</script>', 'latin1');
    // Each of the right length, given once: only its place is wrong.
    const carriers: Record<string, Buffer> = {
      cHRM: Buffer.concat([marker, Buffer.alloc(32 - marker.length, 0x20)]),
      pHYs: Buffer.from('<script>\x01', 'latin1'),
      gAMA: Buffer.from('<scr', 'latin1'),
      bKGD: Buffer.from('<scrip', 'latin1'),
      sBIT: Buffer.from([8, 8, 8]),
    };
    for (const [type, data] of Object.entries(carriers)) {
      const carrier = pngWith(png, type, data);
      expect((await sharp(carrier).raw().toBuffer()).equals(pixels)).toBe(true);
      const prepared = await prepareImage(carrier, limits);
      expect([type, prepared.data.includes(data)]).toEqual([type, false]);
      expect((await sharp(prepared.data).raw().toBuffer()).equals(pixels)).toBe(true);
    }
    // Its colour before the palette: a gAMA after PLTE is skipped as well.
    const palette = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#2980b9' } }).png({ palette: true }).toBuffer();
    const late = pngWithBefore(palette, 'IDAT', 'gAMA', Buffer.from('<scr', 'latin1'));
    expect((await prepareImage(late, limits)).data.includes(Buffer.from('<scr'))).toBe(false);
    const early = pngWithBefore(palette, 'PLTE', 'gAMA', Buffer.from([0, 0, 0xb1, 0x8f]));
    expect((await prepareImage(early, limits)).data).toBe(early);
  });

  it('re-encodes an RGB or RGBA PNG carrying a palette (PLTE) no decoder draws, 768 bytes of anything, the pixels and 16-bit samples kept', async () => {
    const marker = Buffer.from('<script>alert(1)</script>', 'latin1');
    const entries = Buffer.concat([marker, Buffer.alloc(768 - marker.length, 0x20)]);
    const rgb = await makeImage('png', 37, 23);
    const rgba16 = await sharp({ create: { width: 37, height: 23, channels: 4, background: { r: 10, g: 200, b: 30, alpha: 0.5 } } }).toColourspace('rgb16').png().toBuffer();
    for (const png of [rgb, rgba16]) {
      const carrier = pngWithBefore(png, 'IDAT', 'PLTE', entries);
      const raw = (image: Buffer) => sharp(image).toColourspace(png === rgb ? 'srgb' : 'rgb16').raw().toBuffer();
      expect((await raw(carrier)).equals(await raw(png))).toBe(true);
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.includes(marker)).toBe(false);
      expect((await raw(prepared.data)).equals(await raw(png))).toBe(true);
      expect((await sharp(prepared.data).metadata()).depth).toBe((await sharp(png).metadata()).depth);
    }
  });

  it('stores byte for byte what sharp writes: RGB, RGBA, palette, grey, 16-bit and with a colour profile, PNG, WebP and JPEG', async () => {
    const create = (channels: 3 | 4) => sharp({ create: { width: 37, height: 23, channels, background: { r: 200, g: 80, b: 20, alpha: 0.6 } } });
    const images = [
      await create(3).png().toBuffer(),
      await create(4).png().toBuffer(),
      await create(4).png({ palette: true }).toBuffer(),
      await create(3).png({ palette: true, colours: 2 }).toBuffer(),
      await create(3).greyscale().png().toBuffer(),
      await create(4).toColourspace('rgb16').png().toBuffer(),
      await create(3).withIccProfile('p3').png().toBuffer(),
      await create(3).png({ progressive: true }).toBuffer(),
      await create(3).webp({ quality: 80 }).toBuffer(),
      await create(4).webp({ quality: 80 }).toBuffer(),
      await create(4).webp({ quality: 80, alphaQuality: 50 }).toBuffer(),
      await create(4).webp({ lossless: true }).toBuffer(),
      await create(4).webp({ nearLossless: true }).toBuffer(),
      await create(3).withIccProfile('p3').webp({ quality: 80 }).toBuffer(),
      await animatedWebp(3),
      await create(3).jpeg({ quality: 80 }).toBuffer(),
      await create(3).jpeg({ progressive: true }).toBuffer(),
      await create(3).withIccProfile('p3').jpeg().toBuffer(),
    ];
    for (const [i, image] of images.entries()) expect([i, (await prepareImage(image, limits)).data === image]).toEqual([i, true]);
  });

  describe('bytes a WebP decoder steps over unread', () => {
    const marker = Buffer.from('<script>alert(1)</script>', 'latin1');
    const still = (width: number) => sharp({ create: { width, height: 23, channels: 4, background: { r: 200, g: 80, b: 20, alpha: 0.6 } } }).webp({ quality: 80 }).toBuffer();
    const expectReencoded = async (carrier: Buffer, carried: Buffer, pages = 1) => {
      expect((await sharp(carrier).metadata()).pages ?? 1).toBe(pages);
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.equals(carrier)).toBe(false);
      expect(prepared.data.includes(carried)).toBe(false);
      expect((await sharp(prepared.data).metadata()).pages ?? 1).toBe(pages);
      return prepared;
    };

    it('re-encodes a WebP whose padding byte of a chunk of odd size is not a zero', async () => {
      let carrier: Buffer | null = null;
      for (let width = 37; carrier === null; width++) carrier = webpPaddedWith(await still(width), 0x3c);
      const zeroed = webpPaddedWith(carrier, 0)!;
      expect((await prepareImage(zeroed, limits)).data).toBe(zeroed);
      await expectReencoded(carrier, Buffer.from([0x3c]));
    });

    it('re-encodes a WebP whose VP8X reserved bits or a frame\'s reserved flags are set', async () => {
      const image = await still(37);
      const vp8x = Buffer.from(image.subarray(20, 30));
      vp8x.write('<sc', 1, 'latin1');
      await expectReencoded(webpChunkReplaced(image, 'VP8X', vp8x), Buffer.from('<sc'));
      const animation = await animatedWebp(3);
      const flagged = Buffer.from(animation);
      const frame = flagged.indexOf('ANMF', 12, 'latin1');
      flagged[frame + 8 + 15] |= 0xfc;
      await expectReencoded(flagged, flagged.subarray(frame, frame + 24), 3);
    });

    it('re-encodes a WebP whose alpha stored without compression (ALPH) has bytes after the plane, the pixels kept', async () => {
      const image = await still(37);
      const alpha = await sharp(image).extractChannel(3).raw().toBuffer();
      const plain = webpChunkReplaced(image, 'ALPH', Buffer.concat([Buffer.from([0]), alpha]));
      expect((await prepareImage(plain, limits)).data).toBe(plain);
      const carrier = webpChunkReplaced(image, 'ALPH', Buffer.concat([Buffer.from([0]), alpha, marker]));
      const prepared = await expectReencoded(carrier, marker);
      expect((await sharp(prepared.data).extractChannel(3).raw().toBuffer()).equals(alpha)).toBe(true);
    });

    it('re-encodes a WebP whose alpha chunk (ALPH) comes after its VP8 data, where decoders do not read it, of any length', async () => {
      // A lossy WebP without VP8X, as sharp writes an opaque one: an ALPH chunk after its picture is skipped.
      const lossy = await sharp({ create: { width: 37, height: 23, channels: 3, background: '#2980b9' } }).webp({ quality: 80 }).toBuffer();
      expect(lossy.toString('latin1', 12, 16)).toBe('VP8 ');
      await expectReencoded(webpWith(lossy, 'ALPH', Buffer.concat([Buffer.from([1]), marker])), marker);
    });
  });

  it('re-encodes away a suggested palette (sPLT), whose name and entries may hold any bytes, the pixels kept', async () => {
    const png = await makeImage('png', 37, 23);
    // A name, a NUL, sample depth 8, then 6-byte entries: here a location and a page of HTML.
    const entries = Buffer.concat([HTML, Buffer.alloc((6 - (HTML.length % 6)) % 6, 0x20)]);
    const carrier = pngWith(png, 'sPLT', Buffer.concat([Buffer.from('GPS 51.5074N 0.1278W\0\x08', 'latin1'), entries]));
    expect((await sharp(carrier).metadata()).format).toBe('png');
    const prepared = await prepareImage(carrier, limits);
    expect([prepared.data.includes(HTML), prepared.data.includes(Buffer.from('GPS'))]).toEqual([false, false]);
    expect((await sharp(prepared.data).raw().toBuffer()).equals(await sharp(png).raw().toBuffer())).toBe(true);
  });

  it('stores whole a PNG of a given size made by the tests: every byte of it is its picture', async () => {
    for (const bytes of [5000, 204_800, 204_801, 1_048_576]) {
      const png = pngOfSize(bytes);
      expect(png.length).toBe(bytes);
      expect((await prepareImage(png, { maxBytes: 2_000_000, maxPixels: 2_000_000 })).data).toBe(png);
    }
  });

  it('keeps an animation byte for byte, and its frames when a chunk inside a frame or beside them has it re-encoded', async () => {
    const animation = await animatedWebp(3);
    expect((await prepareImage(animation, limits)).data).toBe(animation);
    for (const carrier of [webpWithinFrame(animation, 'XYZW', HTML), webpWith(animation, 'XYZW', HTML)]) {
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.includes(HTML)).toBe(false);
      expect(prepared).toMatchObject({ contentType: 'image/webp', width: 32, height: 32 });
      expect((await sharp(prepared.data).metadata()).pages).toBe(3);
    }
  });

  it('keeps a real colour profile byte for byte, and takes out bytes under a profile\'s name that are none, the pixels kept', async () => {
    const jpeg = await makeImage('jpeg', 37, 23);
    const profiled = await sharp(jpeg).withIccProfile('p3').jpeg().toBuffer();
    expect((await prepareImage(profiled, limits)).data).toBe(profiled);
    const iccNamed = Buffer.concat([Buffer.from('ICC_PROFILE\0\x01\x01', 'latin1'), HTML]);
    const png = await makeImage('png', 37, 23);
    const carriers = [
      jpegWith(jpeg, 0xe2, iccNamed),
      jpegWith(jpeg, 0xe0, Buffer.concat([Buffer.from('JFIF\0\x01\x01\0\0\x01\0\x01\0\0', 'latin1'), HTML])),
      jpegWith(jpeg, 0xee, Buffer.concat([Buffer.from('Adobe\0\x64\0\0\0\0\x01', 'latin1'), HTML])),
      pngWith(png, 'iCCP', Buffer.concat([Buffer.from('icc\0\0', 'latin1'), deflateSync(HTML)])),
      webpWith(await makeImage('webp', 37, 23), 'ICCP', HTML),
    ];
    for (const carrier of carriers) {
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.includes(HTML)).toBe(false);
      expect(prepared).toMatchObject({ width: 37, height: 23 });
    }
    // A JPEG loses the segment alone: the rest of it byte for byte.
    expect((await prepareImage(carriers[0], limits)).data.equals(jpeg)).toBe(true);
  });

  it('keeps a colour profile, and the pixels as they are in it, when an image is re-encoded for its metadata or turned', async () => {
    // Pure green in Display P3 (117, 251, 76 in its numbers), as a phone's photo carries it.
    const green = () => sharp({ create: { width: 8, height: 4, channels: 3, background: '#00ff00' } });
    const isP3 = (icc: Buffer | undefined) => icc !== undefined && icc.includes(Buffer.from('\0P\x003', 'latin1'));
    const carriers = {
      png: pngWith(await green().withIccProfile('p3').png().toBuffer(), 'tEXt', Buffer.from('Comment\0hidden', 'latin1')),
      webp: await green().withIccProfile('p3').withExif({ IFD0: { Make: 'PhoneCo' } }).webp({ lossless: true }).toBuffer(),
      jpeg: await green().withMetadata({ orientation: 6 }).withIccProfile('p3').jpeg({ quality: 100 }).toBuffer(),
    };
    for (const [format, carrier] of Object.entries(carriers)) {
      expect(isP3((await sharp(carrier).metadata()).icc)).toBe(true);
      const prepared = await prepareImage(carrier, limits);
      expect(prepared.data.equals(carrier)).toBe(false);
      const meta = await sharp(prepared.data).metadata();
      expect([format, meta.format, meta.exif, isP3(meta.icc)]).toEqual([format, format, undefined, true]);
      const [r, g, b] = await sharp(prepared.data).keepIccProfile().raw().toBuffer();
      // The JPEG's own loss aside, the same numbers (converted to sRGB, they were about 0, 255, 0).
      for (const [got, want] of [[r, 117], [g, 251], [b, 76]]) expect(Math.abs(got - want)).toBeLessThanOrEqual(2);
    }
  });

  it('converts to sRGB, as before, an image whose colour profile is not an RGB one', async () => {
    // A CMYK JPEG with its profile, given the EXIF of a JPEG to turn.
    const exif = (await sharp(await sharp({ create: { width: 2, height: 2, channels: 3, background: '#ffffff' } }).withMetadata({ orientation: 6 }).jpeg().toBuffer()).metadata()).exif!;
    const cmyk = jpegWith(await sharp({ create: { width: 8, height: 4, channels: 3, background: '#33aa77' } }).toColourspace('cmyk').withIccProfile('cmyk').jpeg().toBuffer(), 0xe1, exif);
    expect(await sharp(cmyk).metadata()).toMatchObject({ space: 'cmyk', orientation: 6 });
    const prepared = await prepareImage(cmyk, limits);
    const meta = await sharp(prepared.data).metadata();
    expect([prepared.width, prepared.height, meta.orientation, meta.icc]).toEqual([4, 8, undefined, undefined]);
  });

  it('refuses an animated PNG, whose frames after the first would be dropped, and takes one of a single frame', async () => {
    const animation = animatedPng(3);
    // libvips reads the default image alone: stored, the animation would come back as a still.
    expect(await sharp(animation).metadata()).toMatchObject({ format: 'png', width: 4, height: 4 });
    await expect(prepareImage(animation, limits)).rejects.toThrow(
      new ImageRejected('The image is an animated PNG (APNG), whose frames would not be kept: send an animated WebP, or a PNG of one frame.'),
    );
    expect(await prepareImage(animatedPng(1), limits)).toMatchObject({ contentType: 'image/png', width: 4, height: 4 });
  });

  it('is what docs/interface.md tells partners of an animated PNG and of a JPEG with metadata', async () => {
    // The partners' page said an APNG was stored as its first frame, after the service had come to refuse it.
    const page = readFileSync(new URL('../../docs/interface.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    const refusal = await prepareImage(animatedPng(2), limits).then(
      () => 'taken',
      (error: Error) => error.message,
    );
    expect(page).toContain(`refused with a 400, since only its first frame could be kept (\`${refusal}\`)`);
    expect(page).not.toMatch(/APNG\)[^.]*stored as its first frame/);
    // A JPEG that needs no turning keeps every byte but its metadata segments, as the page says.
    const jpeg = await makeImage('jpeg', 16, 8);
    expect((await prepareImage(jpegWith(jpeg, 0xfe, Buffer.from('a comment', 'latin1')), limits)).data.equals(jpeg)).toBe(true);
    expect(page).toContain('a JPEG that needs no turning loses those segments and keeps every other byte');
  });

  it('refuses an animation of more frames than the limit, however small they are', async () => {
    const animation = await animatedWebp(3, 4, 4);
    await expect(prepareImage(animation, { ...limits, maxFrames: 2 })).rejects.toThrow(new ImageRejected('The image must have at most 2 frames.'));
    expect((await prepareImage(animation, { ...limits, maxFrames: 3 })).width).toBe(4);
  });

  it("counts every frame of an animation against the pixel limit", async () => {
    const animation = await animatedWebp(3);
    const tight = { maxBytes: 1_000_000, maxPixels: 32 * 32 * 3 - 1 };
    await expect(prepareImage(animation, tight)).rejects.toThrow(new ImageRejected('The image must be at most 3,071 pixels, all its frames together.'));
    expect((await prepareImage(animation, { ...tight, maxPixels: 32 * 32 * 3 })).width).toBe(32);
    expect((await prepareImage(await makeImage('webp', 32, 32), tight)).width).toBe(32);
  });

  it('calls a damaged file of an accepted kind damaged, and anything else of another kind', async () => {
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      const image = await makeImage(format, 37, 23);
      await expect(prepareImage(image.subarray(0, 20), limits)).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
    }
    // A PNG cut inside or before its IEND chunk: its pixels decode, its end is missing.
    const png = await makeImage('png', 37, 23);
    for (const cut of [1, 5, 12]) {
      await expect(prepareImage(png.subarray(0, png.length - cut), limits)).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
    }
    await expect(prepareImage(HTML, limits)).rejects.toThrow(new ImageRejected('The image must be a JPEG, PNG or WebP file.'));
  });

  it('takes EXIF, comments and bytes after the end out of a JPEG that needs no turning, keeping its pixels and every other byte', async () => {
    const phone = await jpegWithLocation();
    const script = Buffer.from('<script>alert(1)</script>', 'latin1');
    const carrier = Buffer.concat([jpegWith(phone, 0xfe, script), script]);
    const prepared = await prepareImage(carrier, limits);
    const meta = await sharp(prepared.data).metadata();
    expect([meta.format, meta.width, meta.height, meta.exif, meta.comments]).toEqual(['jpeg', 40, 30, undefined, undefined]);
    expect(prepared.data.includes(script)).toBe(false);
    expect((await sharp(prepared.data).raw().toBuffer()).equals(await sharp(phone).raw().toBuffer())).toBe(true);
    // Not a re-encoding: the picture's segments and scan are the original's bytes.
    const exifMarker = phone.indexOf(Buffer.from('Exif\0\0', 'latin1')) - 4;
    const exifEnd = exifMarker + 2 + phone.readUInt16BE(exifMarker + 2);
    expect(prepared.data.equals(Buffer.concat([phone.subarray(0, exifMarker), phone.subarray(exifEnd)]))).toBe(true);
  });

  it('refuses an image longer than 20000 pixels on a side, however few its pixels: its decoding time grows with its rows', async () => {
    const tall = await sharp({ create: { width: 1, height: 20_001, channels: 3, background: '#808080' } }).png().toBuffer();
    await expect(prepareImage(tall, { maxBytes: 1_000_000, maxPixels: 40_000_000 })).rejects.toThrow(new ImageRejected('The image must be at most 20000 pixels wide and 20000 high.'));
    const wide = await sharp({ create: { width: 20_000, height: 1, channels: 3, background: '#808080' } }).png().toBuffer();
    expect((await prepareImage(wide, { maxBytes: 1_000_000, maxPixels: 40_000_000 })).width).toBe(20_000);
  });

  it('keeps a lossless WebP lossless when its metadata is re-encoded away: the same pixels', async () => {
    const noise = sharp({ create: { width: 60, height: 40, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } });
    const lossless = await noise.clone().webp({ lossless: true }).toBuffer();
    const withExif = await sharp(lossless).withExif({ IFD0: { Make: 'PhoneCo' } }).webp({ lossless: true }).toBuffer();
    const prepared = await prepareImage(withExif, limits);
    expect((await sharp(prepared.data).metadata()).exif).toBeUndefined();
    expect((await sharp(prepared.data).raw().toBuffer()).equals(await sharp(lossless).raw().toBuffer())).toBe(true);
  });

  it.each([
    [3, 'rgb16'],
    [1, 'grey16'],
  ] as const)('keeps the 16-bit samples of a PNG (%d channels) whose text chunk is re-encoded away', async (channels, space) => {
    const raw = Buffer.alloc(16 * 8 * channels * 2);
    for (let i = 0; i < raw.length; i += 2) raw.writeUInt16LE((i * 7919) % 65536, i);
    // 16-bit raw input: sharp reads `depth` though its types do not name it.
    const png16 = await sharp(raw, { raw: { width: 16, height: 8, channels, depth: 'ushort' } as CreateRaw }).toColourspace(space).png().toBuffer();
    const carrier = pngWith(png16, 'tEXt', Buffer.from('Comment\0hidden', 'latin1'));
    const prepared = await prepareImage(carrier, limits);
    expect(prepared.data.includes(Buffer.from('hidden'))).toBe(false);
    expect(await sharp(prepared.data).metadata()).toMatchObject({ depth: 'ushort', channels });
    expect((await sharp(prepared.data).raw({ depth: 'ushort' }).toBuffer()).equals(await sharp(png16).raw({ depth: 'ushort' }).toBuffer())).toBe(true);
  });

  it.each(['4:4:4', '4:2:0'] as const)('keeps the chroma subsampling (%s) of a JPEG re-encoded to be turned', async (chromaSubsampling) => {
    const noise = sharp({ create: { width: 32, height: 16, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } });
    const turned = await noise.jpeg({ quality: 95, chromaSubsampling }).withMetadata({ orientation: 6 }).toBuffer();
    expect((await sharp(turned).metadata()).chromaSubsampling).toBe(chromaSubsampling);
    const prepared = await prepareImage(turned, limits);
    expect(await sharp(prepared.data).metadata()).toMatchObject({ width: 16, height: 32, chromaSubsampling });
  });

  it('re-encodes a JPEG with an orientation, turned', async () => {
    const turned = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#2980b9' } }).withMetadata({ orientation: 6 }).jpeg().toBuffer();
    const prepared = await prepareImage(turned, limits);
    const meta = await sharp(prepared.data).metadata();
    expect([prepared.width, prepared.height, meta.width, meta.height, meta.orientation, meta.exif]).toEqual([30, 40, 30, 40, undefined, undefined]);
  });

  it.each([2, 3, 4, 5, 6, 7, 8])('turns each frame of an animation with orientation %d, keeping their order, delays and loop', async (orientation) => {
    // Three frames of other pixels each, none symmetric: a frame turned wrong, or out of its place, shows.
    const frames = [0, 1, 2].map((n) => {
      const raw = Buffer.alloc(6 * 4 * 3);
      for (let i = 0; i < raw.length; i++) raw[i] = (i * 29 + n * 71) % 256;
      return raw;
    });
    const pngs = await Promise.all(frames.map((raw) => sharp(raw, { raw: { width: 6, height: 4, channels: 3 } }).png().toBuffer()));
    const animation = await sharp(pngs, { join: { animated: true } }).webp({ loop: 2, delay: [100, 200, 300], lossless: true }).withMetadata({ orientation }).toBuffer();
    const prepared = await prepareImage(animation, limits);
    const quarter = orientation >= 5;
    expect(prepared).toMatchObject({ contentType: 'image/webp', width: quarter ? 4 : 6, height: quarter ? 6 : 4 });
    const meta = await sharp(prepared.data).metadata();
    expect([meta.pages, meta.loop, meta.delay, meta.orientation, meta.exif]).toEqual([3, 2, [100, 200, 300], undefined, undefined]);
    for (const [i, png] of pngs.entries()) {
      // Each frame as sharp turns a single picture of that orientation.
      const expected = await sharp(await sharp(png).withMetadata({ orientation }).png().toBuffer()).autoOrient().raw().toBuffer();
      expect((await sharp(prepared.data, { page: i }).raw().toBuffer()).equals(expected)).toBe(true);
    }
  });

  it("does not decode the image of a request abandoned while it waited for the decoder", async () => {
    const png = await makeImage('png', 37, 23);
    let asked = 0;
    const gone = () => ++asked > 0;
    await expect(prepareImage(png, limits, gone)).rejects.toThrow(new ImageRejected(ABANDONED));
    expect(asked).toBe(1);
    expect((await prepareImage(png, limits, () => false)).data).toBe(png);
  });

  it('refuses an image cut inside its pixel data, which is decoded to its end', async () => {
    const noise = sharp({ create: { width: 400, height: 300, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } });
    for (const image of [await noise.clone().jpeg().toBuffer(), await noise.clone().png().toBuffer(), await noise.clone().webp().toBuffer(), await noise.clone().jpeg({ progressive: true }).toBuffer()]) {
      expect((await prepareImage(image, limits)).data).toBe(image);
      await expect(prepareImage(image.subarray(0, Math.floor(image.length * 0.7)), limits)).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
    }
  });

  it('refuses a JPEG whose scan ends early with an end marker: a large picture claimed over a few bytes', async () => {
    const jpeg = await sharp({ create: { width: 2000, height: 1500, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).jpeg().toBuffer();
    const scan = jpeg.indexOf(Buffer.from([0xff, 0xda]));
    const scanData = scan + 2 + jpeg.readUInt16BE(scan + 2);
    const claimed = Buffer.concat([jpeg.subarray(0, scanData + 40), Buffer.from([0xff, 0xd9])]);
    expect(await sharp(claimed).metadata()).toMatchObject({ width: 2000, height: 1500 });
    await expect(prepareImage(claimed, { maxBytes: 1_000_000, maxPixels: 40_000_000 })).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
  });

  it('refuses a JPEG without its end marker as truncated, though its picture decodes whole', async () => {
    for (const progressive of [false, true]) {
      const jpeg = await sharp({ create: { width: 400, height: 300, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
        .jpeg({ progressive })
        .toBuffer();
      expect(jpeg.subarray(-2)).toEqual(Buffer.from([0xff, 0xd9]));
      const cut = jpeg.subarray(0, -2);
      expect(await sharp(cut, { failOn: 'none' }).raw().toBuffer()).toHaveLength(400 * 300 * 3);
      await expect(prepareImage(cut, limits)).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
    }
  });

  it('refuses a JPEG without its end marker whose decoder never runs short of data (its scan ends in padding bits)', async () => {
    // One colour: libjpeg decodes the last block from the bits there are and warns of nothing.
    const jpeg = await sharp({ create: { width: 56, height: 32, channels: 3, background: { r: 188, g: 68, b: 124 } } })
      .jpeg({ quality: 62 })
      .toBuffer();
    const cut = jpeg.subarray(0, -2);
    const warnings: string[] = [];
    const decoded = sharp(cut, { failOn: 'truncated' }).on('warning', (warning: string) => warnings.push(warning));
    expect(await decoded.resize({ width: 7, height: 4, fit: 'fill', kernel: 'nearest' }).raw().toBuffer()).toHaveLength(7 * 4 * 3);
    expect(warnings.filter((warning) => /premature end of data segment/i.test(warning))).toEqual([]);
    await expect(prepareImage(cut, limits)).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
    // Whole, it is stored as it came.
    expect((await prepareImage(jpeg, limits)).data).toEqual(jpeg);
    // A stray byte where a marker belongs, which decoders step over, hides no cut either.
    const strayed = Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0x00]), cut.subarray(2)]);
    await expect(prepareImage(strayed, limits)).rejects.toThrow(new ImageRejected('The image is truncated or corrupt.'));
    const strayedWhole = Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0x00]), jpeg.subarray(2)]);
    expect((await prepareImage(strayedWhole, limits)).contentType).toBe('image/jpeg');
  });
});

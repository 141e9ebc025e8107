import sharp from 'sharp';
import { jpegWithLocation, makeImage, pngOfSize } from '../../test/helpers/images.js';
import { imageEnd } from './image-end.js';

const HTML = Buffer.from('<html><script>alert(1)</script></html>', 'latin1');

describe('imageEnd', () => {
  const formats = ['jpeg', 'png', 'webp'] as const;

  it.each(formats)('finds the end of a whole %s at its last byte, and before anything appended to it', async (format) => {
    const image = await makeImage(format, 37, 23);
    expect(imageEnd(image, format)).toBe(image.length);
    expect(imageEnd(Buffer.concat([image, HTML]), format)).toBe(image.length);
    expect(imageEnd(Buffer.concat([image, Buffer.alloc(1000)]), format)).toBe(image.length);
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

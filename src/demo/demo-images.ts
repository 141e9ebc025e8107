import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadSharp } from '../common/sharp.js';
import type { DemoDish } from './demo-data.js';

const MAX_LABEL = 34;

/**
 * Renders a small placeholder picture for a demo dish: a plate on a background of the
 * dish's colour with its label underneath, encoded in the requested format. Writes it to
 * `folder/image.file` (creating the folder) and returns that path.
 */
export async function writeDemoImage(folder: string, image: DemoDish['image'], label: string): Promise<string> {
  const { width, height, format } = image;
  const [r, g, b] = parseHexColour(image.color);
  const food = `rgb(${shade(r, 0.7)},${shade(g, 0.7)},${shade(b, 0.7)})`;
  const text = escapeXml(label.trim().length > MAX_LABEL ? `${label.trim().slice(0, MAX_LABEL - 1)}…` : label.trim());
  const cx = width / 2;
  const cy = height * 0.42;
  const plate = Math.min(width, height) * 0.3;
  const fontSize = Math.round(height * 0.07);
  const band = Math.round(height * 0.16);
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">`,
    `<circle cx="${cx}" cy="${cy + 4}" r="${plate}" fill="rgba(0,0,0,0.25)"/>`,
    `<circle cx="${cx}" cy="${cy}" r="${plate}" fill="#fafafa" stroke="#dddddd" stroke-width="2"/>`,
    `<circle cx="${cx}" cy="${cy}" r="${plate * 0.72}" fill="#ffffff" stroke="#eeeeee" stroke-width="1"/>`,
    `<ellipse cx="${cx}" cy="${cy}" rx="${plate * 0.45}" ry="${plate * 0.32}" fill="${food}"/>`,
    `<rect x="0" y="${height - band}" width="${width}" height="${band}" fill="rgba(0,0,0,0.45)"/>`,
    `<text x="${cx}" y="${height - band / 2}" dominant-baseline="central" text-anchor="middle"`,
    ` font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="${fontSize}" fill="#ffffff">${text}</text>`,
    '</svg>',
  ].join('');
  const sharp = await loadSharp();
  const canvas = sharp({ create: { width, height, channels: 3, background: { r, g, b } } }).composite([
    { input: Buffer.from(svg), top: 0, left: 0 },
  ]);
  const encoded =
    format === 'jpeg'
      ? canvas.jpeg({ quality: 80 })
      : format === 'png'
        ? canvas.png({ compressionLevel: 9, palette: true })
        : canvas.webp({ quality: 80 });
  const data = await encoded.toBuffer();
  await mkdir(folder, { recursive: true });
  const path = join(folder, image.file);
  await writeFile(path, data);
  return path;
}

function parseHexColour(colour: string): [number, number, number] {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(colour);
  if (!m) throw new Error(`expected a colour #rrggbb: '${colour}'`);
  return [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)];
}

function shade(channel: number, factor: number): number {
  return Math.round(channel * factor);
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', "'": 'apos' }[c]};`);
}

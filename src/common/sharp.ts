import type sharp from 'sharp';

let loading: Promise<typeof sharp> | undefined;

/**
 * The image library, loaded on first use: it maps libvips and its codecs (some 28 MB of
 * resident memory) into the process, which only image uploads and the demo's pictures need.
 */
export function loadSharp(): Promise<typeof sharp> {
  loading ??= import('sharp').then((module) => module.default);
  return loading;
}

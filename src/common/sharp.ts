import type sharp from 'sharp';

let loading: Promise<typeof sharp> | undefined;

/**
 * The image library, loaded on first use: it maps libvips and its codecs (some 28 MB of
 * resident memory) into the process, which only image uploads and the demo's pictures need.
 */
export function loadSharp(): Promise<typeof sharp> {
  loading ??= import('sharp').then((module) => {
    // No cache of decoded images and operations (libvips keeps up to 50 MB by default): an
    // upload is decoded once, and what a cache held stayed resident after a burst of uploads.
    module.default.cache(false);
    return module.default;
  });
  return loading;
}

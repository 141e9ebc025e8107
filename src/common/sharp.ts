import { createRequire } from 'node:module';
import type sharp from 'sharp';

const require = createRequire(import.meta.url);

/**
 * sharp's entry, found as this module loads, at start: finding it reads package.json files,
 * and Node keeps a read that failed (every descriptor taken, EMFILE) as "no such package" for
 * the rest of the process, as its ES module loader keeps a module whose load failed.
 */
const SHARP_ENTRY = require.resolve('sharp');

/**
 * `load` run on the first call, its result given to every call after; a load that failed is
 * not kept, and the next call runs it again (a load that met EMFILE in a flood of connections
 * failed every upload after it until a restart).
 */
export function loadedOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

/**
 * The image library, loaded on first use: it maps libvips and its codecs (some 28 MB of
 * resident memory) into the process, which only image uploads and the demo's pictures need.
 * Required (CommonJS), which keeps nothing of a load that failed, so that it can be tried again.
 */
export const loadSharp: () => Promise<typeof sharp> = loadedOnce(() => {
  const library = require(SHARP_ENTRY) as typeof sharp;
  // No cache of decoded images and operations (libvips keeps up to 50 MB by default): an
  // upload is decoded once, and what a cache held stayed resident after a burst of uploads.
  library.cache(false);
  return Promise.resolve(library);
});

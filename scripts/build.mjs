// Builds dist/ (`tsc -p tsconfig.build.json`) when what it is built from changed since the
// last build, or always with --force. A start, a CLI call or a test run with nothing changed
// then costs a digest of the sources (milliseconds) instead of a compile (seconds).
// Usage: node scripts/build.mjs [--force] [--no-check]
// --no-check emits without type checking (tsc --noCheck: the same files), for a caller that has
// just type-checked the same sources, as `npm test` does.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
/** Written after a build that succeeded: the digest of the inputs it was built from. */
const STAMP = join(DIST, '.build-stamp');
/** Besides src/: the compiler options, and the lock file (another TypeScript or typings). */
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

/** The files of src/ that the build reads (tests are not built), in a stable order. */
function* sources(dir) {
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (!entry.name.endsWith('.spec.ts')) yield path;
  }
}

/** SHA-256 over the names and contents of the inputs: a file added, removed or changed changes it. */
export function inputDigest() {
  const hash = createHash('sha256');
  for (const file of [...INPUTS.map((name) => join(ROOT, name)), ...sources(join(ROOT, 'src'))]) {
    hash.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

function builtDigest() {
  return existsSync(STAMP) && existsSync(join(DIST, 'main.js')) ? readFileSync(STAMP, 'utf8').trim() : null;
}

/**
 * Runs the compiler unless dist/ was built from the current inputs; returns whether it ran.
 * Throws when the compiler fails (no stamp is written, so the next call compiles again).
 */
export function build({ force = false, check = true, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const digest = inputDigest();
  if (!force && builtDigest() === digest) return false;
  log('building dist/ (tsc -p tsconfig.build.json)');
  // Forced: from nothing. tsc's incremental state alone would not bring back an output file that was removed or edited.
  if (force) rmSync(join(ROOT, 'dist', '.tsbuildinfo'), { force: true });
  const args = ['-p', 'tsconfig.build.json', ...(check ? [] : ['--noCheck'])];
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${tsc.status ?? tsc.signal})`);
  writeFileSync(STAMP, `${digest}\n`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    build({ force: process.argv.includes('--force'), check: !process.argv.includes('--no-check') });
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}

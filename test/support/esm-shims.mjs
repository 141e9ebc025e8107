import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Jest 29 runs this project's tests as native ES modules, but cannot `require()` an ES
 * module from a CommonJS one, which Node 20.19+ itself can. @nestjs/throttler ships only
 * CommonJS that requires the (ES-module-only) NestJS 12 packages, so under Jest it fails to
 * load. This writes an ES-module copy of the installed package for the tests (the service
 * itself loads the real one): each file's `require()`s become imports, its `exports` named
 * exports. Regenerated whenever the installed package is newer than the copy.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function convert(source) {
  const requires = [...new Set([...source.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]))];
  const target = (id) => (id.startsWith('.') ? `${id}.mjs` : id);
  const imports = requires.map((id, i) => `import * as __dep${i} from ${JSON.stringify(target(id))};`);
  const names = [...new Set([...source.matchAll(/^exports\.(\w+) = /gm)].map((m) => m[1]))].filter((n) => n !== '__esModule');
  const stars = [...source.matchAll(/__exportStar\(require\("([^"]+)"\), exports\)/g)].map((m) => `export * from ${JSON.stringify(target(m[1]))};`);
  return [
    ...imports,
    `const __deps = new Map([${requires.map((id, i) => `[${JSON.stringify(id)}, __dep${i}]`).join(', ')}]);`,
    'const module = { exports: {} };',
    'const require = (id) => { if (!__deps.has(id)) throw new Error(`not shimmed: ${id}`); return __deps.get(id); };',
    '(function (exports, require, module) {',
    source,
    '})(module.exports, require, module);',
    'export default module.exports;',
    ...names.map((n) => `export const ${n} = module.exports.${n};`),
    ...stars,
    '',
  ].join('\n');
}

export function esmShim(pkg) {
  const from = join(root, 'node_modules', pkg, 'dist');
  const to = join(root, 'test', 'generated', 'esm', pkg.replace('/', '__'));
  const marker = join(to, '.source');
  const stamp = String(statSync(join(root, 'node_modules', pkg, 'package.json')).mtimeMs);
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== stamp) {
    mkdirSync(to, { recursive: true });
    for (const file of readdirSync(from).filter((f) => f.endsWith('.js'))) {
      writeFileSync(join(to, file.replace(/\.js$/, '.mjs')), convert(readFileSync(join(from, file), 'utf8')));
    }
    writeFileSync(marker, stamp);
  }
  return join(to, 'index.mjs');
}

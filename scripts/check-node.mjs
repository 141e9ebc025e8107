// Exits 1 with one line when this Node.js is outside package.json `engines.node`.
// Usage: node scripts/check-node.mjs [version]   (default: the running Node.js)
// Written for the range forms package.json uses (`^X.Y.Z`, `>=X.Y.Z`, joined by `||`), with
// syntax old Node.js versions still run, so they get the message instead of a crash.
import { readFileSync } from 'node:fs';

const range = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
const given = process.argv[2] || process.versions.node;

function parse(text) {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  if (!match) throw new Error(`not a Node.js version: '${text}'`);
  return match.slice(1, 4).map(Number);
}

function compare(a, b) {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

function satisfies(version, comparator) {
  const match = /^(\^|>=)\s*(\d+\.\d+\.\d+)$/.exec(comparator.trim());
  if (!match) throw new Error(`engines.node: unsupported comparator '${comparator}' (use ^X.Y.Z or >=X.Y.Z)`);
  const floor = parse(match[2]);
  if (compare(version, floor) < 0) return false;
  return match[1] === '>=' || version[0] === floor[0];
}

const version = parse(given);
if (!range.split('||').some((comparator) => satisfies(version, comparator))) {
  process.stderr.write(`results-service needs Node.js ${range} (package.json engines); this is Node.js ${given.replace(/^v/, '')}.\n`);
  process.exit(1);
}

import { build } from '../../scripts/build.mjs';

/**
 * Jest globalSetup of the HTTP and database tests: several of them run the built service or
 * CLI (`node dist/main.js`, `node dist/cli.js`, a copy of dist/ as a production install), so
 * dist/ is brought up to date first, whether jest runs from `npm test` or on its own. With
 * nothing changed since the last build this only reads the sources.
 */
export default function buildDist() {
  build({ log: (line) => process.stderr.write(`\n${line}: the tests run the built service\n`) });
}

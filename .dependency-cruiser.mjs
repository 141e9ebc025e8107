/**
 * The import rules of src/, checked by `npm run lint` (see docs/architecture.md).
 *
 * Layers: src/common, src/config and src/database are below every feature and import none.
 * Features (one folder each under src/) may use each other's modules, services and other
 * exported helpers, but never another feature's repository or entities: the data a feature
 * owns is read and written through the feature's services. Two exceptions are structural:
 * an entity may name another feature's entity in a TypeORM relation, and database/ lists
 * every feature's entities.
 *
 * That features import each other one way (no two folders in a cycle) is checked by
 * scripts/import-rules.mjs, which reports these rules' violations too.
 */
const FEATURES = ['auth', 'visits', 'menus', 'branches', 'clients', 'webhooks', 'rate-limit', 'metrics', 'health', 'demo', 'logging', 'redis', 'cli'];
const FEATURE = `^src/(${FEATURES.join('|')})/`;

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes two files (and their folders) one unit: neither can change or be tested alone.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'lower-layers-import-no-feature',
      severity: 'error',
      comment:
        'common/, config/ and database/ sit below the features. Only the lists of every entity and migration ' +
        '(database/entities.ts, database/migrations/index.ts) name features, and the visit-documents backfill ' +
        '(and its repair) renders documents with the code that renders them on write, so both agree.',
      from: {
        path: '^src/(common|config|database)/',
        pathNot: '^src/database/(entities\\.ts|migrations/index\\.ts|migrations/visit-documents-backfill\\.ts)$',
      },
      to: { path: FEATURE },
    },
    {
      name: 'no-other-feature-repository',
      severity: 'error',
      comment: "A feature reaches another feature's data through its exported services, never its repository.",
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/[^/]+/.*\\.repository\\.ts$', pathNot: '^src/$1/' },
    },
    {
      name: 'no-other-feature-entities',
      severity: 'error',
      comment: "Another feature's entities are its storage: only entities (for relations) and database/ may import them.",
      from: { path: '^src/([^/]+)/', pathNot: ['^src/database/', '^src/[^/]+/entities/'] },
      to: { path: '^src/[^/]+/entities/', pathNot: '^src/$1/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve is a typo or a missing package.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
    },
  },
};

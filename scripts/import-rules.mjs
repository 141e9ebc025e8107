/**
 * `depcruise src --output-type json | node scripts/import-rules.mjs` (part of `npm run lint`):
 * prints the violations of .dependency-cruiser.mjs and the cycles between the folders of src/,
 * and fails when there is any.
 *
 * dependency-cruiser finds cycles between files; two features can still import each other
 * through different files (auth's module importing the rate-limit guard, the guard importing
 * auth's helpers). Here every file counts as its top folder under src/ (src/auth/guards/x.ts
 * is auth), and a cycle between such folders is an error. Left out, because they list every
 * feature by design: src/database/entities.ts and src/database/migrations/. Tests are left
 * out too: a spec may use any test helper.
 */

/** The folder under src/ a file belongs to, or null for files outside the graph. */
function folderOf(path) {
  if (/\.spec\.ts$/.test(path) || /^src\/database\/(entities\.ts|migrations\/)/.test(path)) return null;
  const match = /^src\/([^/]+)\//.exec(path);
  return match ? match[1] : null;
}

/** Folder -> folder -> one file-level import that makes the edge, as an example. */
function folderGraph(modules) {
  const graph = new Map();
  for (const module of modules) {
    const from = folderOf(module.source);
    if (!from) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    for (const dependency of module.dependencies) {
      const to = /^src\/([^/]+)\//.exec(dependency.resolved)?.[1];
      if (to && to !== from && !graph.get(from).has(to)) graph.get(from).set(to, `${module.source} → ${dependency.resolved}`);
    }
  }
  return graph;
}

/** The strongly connected components of more than one folder (Tarjan). */
function cycles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const found = [];
  const visit = (node) => {
    index.set(node, index.size);
    low.set(node, index.get(node));
    stack.push(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node), index.get(next)));
    }
    if (low.get(node) === index.get(node)) {
      const component = stack.splice(stack.indexOf(node));
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** The report's lines and how many errors it names. */
function report(result) {
  const lines = result.summary.violations.map((v) => `error ${v.rule.name}: ${v.from} → ${v.to}`);
  const graph = folderGraph(result.modules);
  for (const component of cycles(graph)) {
    const members = new Set(component);
    const edges = component.flatMap((from) => [...graph.get(from)].filter(([to]) => members.has(to)).map(([, example]) => `    ${example}`));
    lines.push(`error folder-cycle: ${component.join(', ')} import each other:`, ...edges);
  }
  const errors = lines.filter((l) => l.startsWith('error')).length;
  lines.push(`${errors === 0 ? '✔ no' : `✘ ${errors}`} import rule violations (${result.summary.totalCruised} modules cruised).`);
  return { lines, errors };
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { lines, errors } = report(JSON.parse(Buffer.concat(chunks).toString('utf8')));
process.stdout.write(`${lines.join('\n')}\n`);
process.exitCode = errors === 0 ? 0 : 1;

#!/usr/bin/env bash
# Every test of the project: install, build, the unit tests, and the HTTP, database and browser
# tests on SQLite and on PostgreSQL; beside them lint, the import rules, the type check and the
# contract (generated from the code, committed, and linted).
# Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/ensure-services.sh
bash scripts/ensure-test-packages.sh
fresh=$(mktemp -d)
# Only the build comes before the tests (several start the built service). The checks that
# feed nothing to them run beside them, on the core their workers leave idle while they wait on
# a spawned process, a browser or the database: lint (the longest, one core), the import
# rules, the type check and the contract's. Their verdicts are read once the tests are over,
# each in this order, and any failure fails the run.
checks=()
beside() {
  local name=$1
  shift
  ("$@") >"$fresh/$name.log" 2>&1 &
  checks+=("$name:$!")
  echo "== $name (beside the tests; its verdict after them)"
}
contract() {
  node dist/openapi-export.js "$fresh/openapi" >/dev/null
  if ! diff -ru openapi "$fresh/openapi"; then
    echo "openapi/ differs from what the code generates: run 'npm run openapi' and commit the result."
    return 1
  fi
  npx openapi-typescript openapi/openapi.json --output "$fresh/results-api.ts" --silent
  if ! diff -u test/generated/results-api.ts "$fresh/results-api.ts"; then
    echo "test/generated/results-api.ts differs from what openapi/openapi.json generates: run 'npm run openapi' and commit the result."
    return 1
  fi
  npx redocly lint openapi/openapi.json --format=stylish
}
trap 'for check in "${checks[@]}"; do kill "${check#*:}" 2>/dev/null || true; done; rm -rf "$fresh"' EXIT
beside lint npx eslint --max-warnings=0 .
beside import-rules bash -o pipefail -c 'npx depcruise src --output-type json | node scripts/import-rules.mjs'
# Incremental: a run after a small change checks what it touches (the state under node_modules/.cache).
beside type-check npx tsc -p tsconfig.json --incremental --tsBuildInfoFile node_modules/.cache/tsc/tsconfig.tsbuildinfo
# The type check covers the same files (tsconfig.json covers src/): the build only emits.
echo "== build" && node scripts/build.mjs --force --no-check
# The contract the built code generates is the committed one, and so are the client types made from it.
beside contract contract
echo "== tests"
# A larger young generation: the workers load the service's modules afresh for every test
# file, and collected less often that costs them about 7% less CPU.
tests=0
NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning --max-semi-space-size=64 ${NODE_OPTIONS:-}" \
  node node_modules/jest/bin/jest.js --ci "$@" || tests=$?
failed=()
for check in "${checks[@]}"; do
  name=${check%%:*}
  echo "== $name"
  if wait "${check#*:}"; then cat "$fresh/$name.log"; else cat "$fresh/$name.log" >&2; failed+=("$name"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]} (see above)" >&2
  exit 1
fi
exit "$tests"

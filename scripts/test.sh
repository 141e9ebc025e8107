#!/usr/bin/env bash
# Every test of the project: install, the contract, lint (with the import rules), type check,
# build, unit tests, and the HTTP, database and browser tests on SQLite and on PostgreSQL.
# Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/ensure-services.sh
bash scripts/ensure-test-packages.sh
fresh=$(mktemp -d)
# Lint is the longest check and runs on one core: it runs beside the checks after it and the
# tests (whose workers leave a core idle while they wait on a spawned process or a browser),
# and its verdict is read once the tests are over.
echo "== lint (beside the checks and tests below; its verdict after the tests)"
npx eslint --max-warnings=0 . >"$fresh/lint.log" 2>&1 &
lint=$!
trap 'kill "$lint" 2>/dev/null || true; rm -rf "$fresh"' EXIT
echo "== import rules" && npx depcruise src --output-type json | node scripts/import-rules.mjs
# Incremental: a run after a small change checks what it touches (the state under node_modules/.cache).
echo "== type check" && npx tsc -p tsconfig.json --incremental --tsBuildInfoFile node_modules/.cache/tsc/tsconfig.tsbuildinfo
# The sources were type-checked just above (tsconfig.json covers src/): the build only emits.
echo "== build" && node scripts/build.mjs --force --no-check
echo "== contract is current"
node dist/openapi-export.js "$fresh/openapi" >/dev/null
if ! diff -ru openapi "$fresh/openapi"; then
  echo "openapi/ differs from what the code generates: run 'npm run openapi' and commit the result." >&2
  exit 1
fi
echo "== client types are current"
npx openapi-typescript openapi/openapi.json --output "$fresh/results-api.ts" --silent
if ! diff -u test/generated/results-api.ts "$fresh/results-api.ts"; then
  echo "test/generated/results-api.ts differs from what openapi/openapi.json generates: run 'npm run openapi' and commit the result." >&2
  exit 1
fi
echo "== contract lint" && npx redocly lint openapi/openapi.json --format=stylish
echo "== tests"
# A larger young generation: the workers load the service's modules afresh for every test
# file, and collected less often that costs them about 7% less CPU.
tests=0
NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning --max-semi-space-size=64 ${NODE_OPTIONS:-}" \
  node node_modules/jest/bin/jest.js --ci "$@" || tests=$?
echo "== lint"
if ! wait "$lint"; then
  cat "$fresh/lint.log" >&2
  echo "lint failed: see above" >&2
  exit 1
fi
cat "$fresh/lint.log"
exit "$tests"

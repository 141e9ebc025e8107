#!/usr/bin/env bash
# Every test of the project: install, lint, type check, build, unit tests and the HTTP and
# database tests on SQLite and on PostgreSQL. Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
bash scripts/ensure-services.sh
echo "== lint" && npx eslint --max-warnings=0 .
echo "== type check" && npx tsc -p tsconfig.json
echo "== build" && npx tsc -p tsconfig.build.json
echo "== tests"
NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning ${NODE_OPTIONS:-}" \
  node node_modules/jest/bin/jest.js --ci "$@"

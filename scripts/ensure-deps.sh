#!/usr/bin/env bash
# Refuses a Node.js outside package.json `engines`, then installs the locked dependencies
# when node_modules is missing or older than the lock file.
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/check-node.mjs
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

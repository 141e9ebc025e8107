#!/usr/bin/env bash
# Writes a migration for each database from the entity changes:
#   npm run migration:generate -- AddSomething
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: npm run migration:generate -- Name}"
node scripts/build.mjs
tmp=$(mktemp -d)
schema="gen_$(date +%s)_$$"
PG_URL="${GENERATE_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
trap 'rm -rf "$tmp"; psql "${PG_URL}" -qc "DROP SCHEMA IF EXISTS ${schema} CASCADE" >/dev/null 2>&1 || true' EXIT
env -u DATABASE_URL DATA_DIR="$tmp" node dist/cli.js migrations generate "$name"
DATABASE_URL="$PG_URL" DATABASE_SCHEMA="$schema" node dist/cli.js migrations generate "$name"

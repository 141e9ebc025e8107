#!/usr/bin/env bash
# Refuses a Node.js outside package.json `engines`, then installs the locked dependencies
# unless node_modules was installed from this very package-lock.json for this Node.js ABI.
# A stamp in node_modules records both; a tree installed without the stamp (a plain
# `npm ci`, as CI runs before `npm test`) is taken as current while npm's own record of it
# is newer than the lock file, as npm ci leaves it.
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/check-node.mjs
stamp=node_modules/.install-stamp
wanted="$(node -p 'const lock = require("node:fs").readFileSync("package-lock.json");
  `${require("node:crypto").createHash("sha256").update(lock).digest("hex")} ${process.versions.modules}-${process.platform}-${process.arch}`')"
if [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  exit 0
fi
if [ ! -f "$stamp" ] && [ -f node_modules/.package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  echo "$wanted" > "$stamp"
  exit 0
fi
echo "installing the locked dependencies (npm ci)" >&2
# Cached package documents are used without asking the registry again (the lock pins every
# version), and node-gyp compiles on every core: where better-sqlite3's prebuilt binary
# cannot be downloaded (it comes from GitHub, not the registry), SQLite is compiled from
# source, the longest step of a first install.
JOBS=max npm ci --prefer-offline --no-audit --no-fund
echo "$wanted" > "$stamp"

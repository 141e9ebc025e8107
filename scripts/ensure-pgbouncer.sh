#!/usr/bin/env bash
# The PgBouncer test (test/postgres/pgbouncer.e2e-spec.ts) runs the service through a PgBouncer
# it starts itself. Installs Debian's pgbouncer when /usr/sbin/pgbouncer is missing; the
# package's own service is not used (the test runs its own, on a free port).
set -euo pipefail
if [ ! -x /usr/sbin/pgbouncer ]; then
  echo "installing Debian's pgbouncer for the PgBouncer test" >&2
  sudo=""
  [ "$(id -u)" = "0" ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
  /usr/sbin/pgbouncer --version >/dev/null
fi

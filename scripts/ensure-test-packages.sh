#!/usr/bin/env bash
# What the tests run from Debian's packages, installed when missing, with one apt-get update:
# - chromium: the Swagger UI test drives it through playwright-core (no downloaded browser);
# - kubectl: the deployment test renders deploy/k8s with `kubectl kustomize` (no cluster): the
#   package `kubectl` where the apt sources have one, else Debian 12's `kubernetes-client`
#   (kubectl 1.20, whose kustomize 2.0 renders deploy/k8s the same way);
# - pgbouncer: the PgBouncer test (test/postgres/pgbouncer.e2e-spec.ts) runs a PgBouncer of its
#   own on a free port; the package's own service is not used.
set -euo pipefail
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
[ -x /usr/bin/kubectl ] || missing+=(kubectl)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" = "0" ] || sudo="sudo"
# Another install on the machine (an operator's, a second test run's) holds dpkg's lock for a
# while: wait for it (up to 10 minutes) rather than fail the whole test run at once.
wait_lock=(-o DPkg::Lock::Timeout=600)
$sudo apt-get "${wait_lock[@]}" update -qq
packages=()
for name in "${missing[@]}"; do
  if [ "$name" = kubectl ] && ! apt-cache show kubectl >/dev/null 2>&1; then packages+=(kubernetes-client); else packages+=("$name"); fi
done
echo "installing Debian's ${packages[*]} for the tests" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq "${packages[@]}" >/dev/null
[ -x /usr/bin/chromium ] && /usr/bin/kubectl version --client >/dev/null && /usr/sbin/pgbouncer --version >/dev/null

#!/usr/bin/env bash
# The deployment test renders deploy/k8s with `kubectl kustomize` (no cluster needed).
# Installs a kubectl from Debian's packages when /usr/bin/kubectl is missing: the package
# `kubectl` where the apt sources have one, else Debian 12's `kubernetes-client` (kubectl 1.20,
# whose kustomize 2.0 renders deploy/k8s the same way).
set -euo pipefail
if [ ! -x /usr/bin/kubectl ]; then
  echo "installing a kubectl from Debian's packages for the deployment test" >&2
  sudo=""
  [ "$(id -u)" = "0" ] || sudo="sudo"
  $sudo apt-get update -qq
  package=kubernetes-client
  if apt-cache show kubectl >/dev/null 2>&1; then package=kubectl; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  /usr/bin/kubectl version --client >/dev/null
fi

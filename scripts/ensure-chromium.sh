#!/usr/bin/env bash
# The Swagger UI test drives Debian's Chromium through playwright-core (no downloaded browser).
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium for the browser test" >&2
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
fi

#!/usr/bin/env bash
# Install the Debian tools the checks drive: chromium (the dashboard's browser tests, through Playwright,
# never a browser download) and prometheus (promtool checks the alerting rules). Idempotent; everything
# goes to stderr. Needs root or passwordless apt; a machine that already has both skips apt entirely.
set -euo pipefail

need=()
command -v chromium >/dev/null || need+=(chromium)
command -v promtool >/dev/null || need+=(prometheus)
ls /usr/lib/python3/dist-packages/simgrid.cpython-311-*.so >/dev/null 2>&1 || need+=(python3-simgrid) # SimGrid cross-check (tests/sim/test_simgrid.py)
command -v kubectl >/dev/null || need+=(kubernetes-client) # kubectl kustomize renders deploy/k8s/
if [ "${#need[@]}" -gt 0 ]; then
  echo "ci-tools: installing ${need[*]} from the Debian packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

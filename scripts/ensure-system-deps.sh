#!/usr/bin/env bash
# Installs the Debian packages Ratchet's tests need, when they are missing. Idempotent: does nothing
# when every command is already there. Needs root (or sudo) only when something must be installed.
set -euo pipefail

# command → Debian package
declare -A NEED=(
  [git]=git
  [python3]=python3
  [bash]=bash
  [bwrap]=bubblewrap
  [chromium]=chromium
)

# Commands Debian installs off PATH (a glob of their location) → Debian package. The PostgreSQL
# server binaries live under /usr/lib/postgresql/<major>/bin; the test harness (test/harness/pg.ts)
# starts a throwaway cluster with them.
declare -A NEED_AT=(
  ["/usr/lib/postgresql/*/bin/pg_ctl"]=postgresql
)

missing=()
for cmd in "${!NEED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEED[$cmd]}")
done
for glob in "${!NEED_AT[@]}"; do
  compgen -G "$glob" >/dev/null || missing+=("${NEED_AT[$glob]}")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "ratchet: installing missing system packages: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "ratchet: need root to install ${missing[*]} (apt-get install ${missing[*]})" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

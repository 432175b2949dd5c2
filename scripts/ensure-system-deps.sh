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

missing=()
for cmd in "${!NEED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEED[$cmd]}")
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

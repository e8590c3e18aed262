#!/usr/bin/env bash
# Installs the named Debian packages that are not installed yet.
# Non-interactive, idempotent; runs apt-get update at most once.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "tools: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
# A retry covers a mirror hiccup on a fresh machine; a second failure is final.
for try in 1 2; do
  if $sudo apt-get update -qq -o DPkg::Lock::Timeout=900 && $sudo apt-get install -y -qq -o DPkg::Lock::Timeout=900 --no-install-recommends "${missing[@]}"; then
    exit 0
  fi
  echo "tools: apt-get failed (try $try of 2)" >&2
  sleep 5
done
exit 1

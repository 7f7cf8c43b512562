#!/usr/bin/env bash
# Installs what building, testing and the demo need on a fresh Debian 12 machine, and only
# what is missing. Sourced by demo.sh and test.sh.
set -euo pipefail

packages=(libx264-dev libopus-dev libv4l-dev libasound2-dev libsqlite3-dev ffmpeg pkg-config openssl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
  for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
    [ -x "$candidate/swift" ] && export PATH="$candidate:$PATH" && break
  done
fi
command -v swift >/dev/null 2>&1 || {
  echo "bootstrap: a Swift 6 toolchain is required (https://swift.org/install/linux/); none found on PATH or in /opt/swift." >&2
  exit 1
}

#!/usr/bin/env bash
# Installs what building, testing and the demo need on a fresh Debian 12 machine, and only
# what is missing. Sourced by demo.sh and test.sh.
set -euo pipefail

packages=(libx264-dev libopus-dev libv4l-dev libasound2-dev libsqlite3-dev ffmpeg pkg-config openssl python3-venv)
# The test command (BOOTSTRAP_FOR_TESTS=1) also needs the browser the web console is tested in,
# PostgreSQL for the catalog's second backend (scripts/catalog-postgres.sh starts its own
# cluster), and Ceph's monitor, OSD and RADOS Gateway: the S3 server the object storage client is
# tested against (scripts/object-store.sh), and iproute2 for the network namespaces the fleet
# tests put record-servers in. OBJECT_STORE_TESTS=1 turns those tests on (they fail,
# naming what is missing, when the store cannot start; without it they do not run).
if [ "${BOOTSTRAP_FOR_TESTS:-0}" = 1 ]; then
  packages+=(chromium chromium-driver postgresql-15 ceph-mon ceph-osd radosgw ceph-common iproute2)
  export OBJECT_STORE_TESTS=1
fi
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

# schemathesis (PyPI), which fuzzes the admin API from docs/openapi.yaml (RecordServerTests'
# APIFuzzTests, scripts/api-fuzz.sh): in a virtual environment under .build, made once. The
# version is pinned because its command line changed between major versions.
schemathesis_version=4.32.5
schemathesis_venv=.build/schemathesis
if [ "$("$schemathesis_venv/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $schemathesis_version" ]; then
  echo "bootstrap: installing schemathesis $schemathesis_version into $schemathesis_venv" >&2
  python3 -m venv "$schemathesis_venv"
  "$schemathesis_venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version"
fi
# selenium (PyPI) drives Debian's chromium through chromedriver in the console's browser tests
# (Tests/Browser); the same environment, pinned, installed once.
selenium_version=4.40.0
if [ "${BOOTSTRAP_FOR_TESTS:-0}" = 1 ] && [ "$(cat "$schemathesis_venv/.selenium-installed" 2>/dev/null)" != "$selenium_version" ]; then
  echo "bootstrap: installing selenium $selenium_version into $schemathesis_venv" >&2
  "$schemathesis_venv/bin/pip" install -q --disable-pip-version-check "selenium==$selenium_version"
  echo "$selenium_version" > "$schemathesis_venv/.selenium-installed"
fi
# botocore (PyPI), AWS's own request signer: the independent reference the S3 signer is checked
# against (Tests/ObjectStorageTests, scripts/lib/sigv4_reference.py); same environment, pinned.
botocore_version=1.43.11
if [ "${BOOTSTRAP_FOR_TESTS:-0}" = 1 ] && [ "$(cat "$schemathesis_venv/.botocore-installed" 2>/dev/null)" != "$botocore_version" ]; then
  echo "bootstrap: installing botocore $botocore_version into $schemathesis_venv" >&2
  "$schemathesis_venv/bin/pip" install -q --disable-pip-version-check "botocore==$botocore_version"
  echo "$botocore_version" > "$schemathesis_venv/.botocore-installed"
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

#!/usr/bin/env bash
# Runs the deploy/ units under a real systemd: boots a throwaway Debian 12 container with
# systemd as PID 1 (systemd-nspawn), follows docs/operations.md in it (install.sh, CA, server
# certificate, agent enrolment, configuration, systemctl enable --now), records 10 s from the
# agent's test sources through the server, stops both services, and checks the recording with
# ffprobe on this host. Prints `systemd-analyze security` for both units.
#
# Needs root, network access to deb.debian.org (debootstrap, ~150 MB once) and the release
# binaries (built here). Not part of the test command: it installs packages on this host
# (systemd-container, debootstrap) and downloads a root file system.
#
#   sudo scripts/systemd-check.sh            # container root in /var/tmp/record-systemd-check
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

[[ $(id -u) -eq 0 ]] || { echo "systemd-check: must run as root" >&2; exit 1; }
root=${SYSTEMD_CHECK_ROOT:-/var/tmp/record-systemd-check}
log=$root.console.log
step() { echo "systemd-check: $*" >&2; }
fail() { echo "systemd-check: FAILED: $*" >&2; exit 1; }

source scripts/bootstrap.sh
need=()
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v ffprobe >/dev/null || need+=(ffmpeg)
if ((${#need[@]})); then
    step "installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

step "building the release binaries"
for product in record-server capture-agent recordctl; do
    swift build -c release --scratch-path .build-bench --product "$product" >&2
done
bin=$repo/.build-bench/release
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")

if [[ ! -x $root/lib/systemd/systemd || ! -e $root/usr/lib/x86_64-linux-gnu/libcurl.so.4 ]]; then
    rm -rf "$root"
    step "debootstrap Debian 12 into $root"
    debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,libsqlite3-0,libx264-164,libopus0,libasound2,libv4l-0,libcurl4,libstdc++6,procps \
        bookworm "$root" http://deb.debian.org/debian >&2
fi
rm -rf "$root/opt/record-src"
install -d "$root/opt/record-src/bin"
cp -r deploy "$root/opt/record-src/"
cp "$bin/record-server" "$bin/capture-agent" "$bin/recordctl" "$root/opt/record-src/bin/"
rm -rf "$root/var/lib/record-server" "$root/etc/record-server" "$root/etc/capture-agent" "$root/root/ca"

step "booting the container (systemd as PID 1; console in $log)"
# The Swift runtime of the (dynamically linked) release build, read-only at the same path.
systemd-nspawn --quiet --register=no --keep-unit --console=pipe --bind-ro="$toolchain" \
    -D "$root" --machine=record-systemd-check -b > "$log" 2>&1 &
nspawn=$!
trap 'kill "$nspawn" 2>/dev/null || true; wait "$nspawn" 2>/dev/null || true' EXIT
init=""
for _ in $(seq 100); do
    init=$(pgrep -P "$nspawn" -x systemd || true)
    [[ -n $init ]] && break
    sleep 0.2
done
[[ -n $init ]] || fail "the container did not start systemd (see $log)"
run() { nsenter -t "$init" -a -- /bin/bash -ec "$1"; }
state=$(run "systemctl is-system-running --wait" || true)
step "container $state (systemd $(run "systemctl --version | head -1 | cut -d' ' -f2"), PID 1 = $(run "cat /proc/1/comm"))"

step "docs/operations.md §1: deploy/install.sh both"
run "BIN_DIR=/opt/record-src/bin /opt/record-src/deploy/install.sh both" >&2

step "§2–4: CA, server certificate, agent enrolment"
run '
    recordctl ca init --ca-dir /root/ca --name "systemd-check CA" >/dev/null
    cd /root/ca
    recordctl ca issue server --ca-dir /root/ca --host localhost --ip 127.0.0.1 --out server >/dev/null
    recordctl ca issue agent --ca-dir /root/ca cam-a --out cam-a >/dev/null
    install -m 0644 -o root -g record-server ca.pem /etc/record-server/tls/ca.pem
    install -m 0644 -o root -g record-server server.pem /etc/record-server/tls/server.pem
    install -m 0600 -o record-server -g record-server server-key.pem /etc/record-server/tls/server-key.pem
    install -m 0644 -o root -g capture-agent ca.pem /etc/capture-agent/ca.pem
    install -m 0644 -o root -g capture-agent cam-a.pem /etc/capture-agent/agent.pem
    install -m 0600 -o capture-agent -g capture-agent cam-a-key.pem /etc/capture-agent/agent-key.pem
'

step "§5: agent configuration (test cameras, ALSA null microphone; no camera on this host)"
run 'cat > /etc/capture-agent/capture-agent.json <<JSON
{
  "server": "127.0.0.1:7443",
  "ca": "/etc/capture-agent/ca.pem",
  "cert": "/etc/capture-agent/agent.pem",
  "key": "/etc/capture-agent/agent-key.pem",
  "agentID": "cam-a",
  "sources": ["front=test:640x360@30", "back=test:640x360@30", "mic=alsa:null?channels=1"],
  "record": false
}
JSON
chown root:capture-agent /etc/capture-agent/capture-agent.json; chmod 0640 /etc/capture-agent/capture-agent.json'

step "§6: systemctl enable --now record-server capture-agent"
run "systemctl enable --now record-server capture-agent" >&2
export_token="export RECORDCTL_TOKEN_FILE=/etc/record-server/admin.token"
for _ in $(seq 60); do
    run "$export_token; recordctl agents 2>/dev/null | grep -q cam-a" && break
    sleep 0.5
done
if ! run "$export_token; recordctl agents | grep -q cam-a"; then
    run "journalctl --no-pager -n 40 -u capture-agent -u record-server" >&2 || true
    fail "the agent did not connect"
fi
run "$export_token; recordctl agents" >&2
step "running as: $(run 'ps -o user=,comm= -C record-server,capture-agent | tr -s " " | paste -sd ";"')"

step "§7: recordctl start, 10 s, recordctl stop"
# "started session ID on agent cam-a"
session=$(run "$export_token; recordctl start --agent cam-a --wait 5" | awk '{for (i = 1; i < NF; i++) if ($i == "session") { print $(i + 1); exit }}')
[[ -n $session ]] || fail "recordctl start printed no session id"
sleep 10
run "$export_token; recordctl stop $session" >&2
path=$(run "$export_token; recordctl recordings --json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["recordings"][0]["path"])')
step "recording: $path"

step "stopping both services (SIGTERM, graceful)"
run "systemctl stop capture-agent record-server"
for unit in record-server capture-agent; do
    result=$(run "systemctl show -p Result --value $unit")
    status=$(run "systemctl show -p ExecMainStatus --value $unit")
    echo "$unit: Result=$result ExecMainStatus=$status"
    [[ $result == success ]] || fail "$unit stopped with $result (journalctl -u $unit)"
done
run "journalctl --no-pager -u record-server -u capture-agent | grep -Ei 'denied|EPERM|operation not permitted' || true" >&2

step "ffprobe on this host"
ffprobe -v error -count_packets -show_entries stream=codec_name,width,height,nb_read_packets -of csv=p=0 "$root$path"
errors=$(ffmpeg -nostdin -v error -i "$root$path" -f null - 2>&1 | head -5)
[[ -z $errors ]] || fail "ffmpeg decoding printed: $errors"
echo "ffmpeg -v error: no errors"

step "systemd-analyze security"
run "systemd-analyze security --no-pager record-server capture-agent" | tail -4

run "systemctl poweroff" || true
wait "$nspawn" || true
trap - EXIT
echo "systemd-check: OK"

#!/usr/bin/env bash
# Runs the deploy/ units under a real systemd: boots a throwaway Debian 12 container with
# systemd as PID 1 (systemd-nspawn), follows docs/operations.md in it (install.sh, CA, server
# certificate, agent enrolment, configuration, systemctl enable --now), then on this host checks
# with ffprobe/ffmpeg (frame counts against duration, no decoding errors):
#   1. a 10 s recording (recordctl start/stop) and a graceful stop of both services;
#   2. `systemctl restart record-server` in the middle of a recording: the session resumes
#      into the same file and ends completed with every frame;
#   3. both services stopped during a recording: neither needs systemd's SIGKILL.
# Prints `systemd-analyze security` for both units.
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
    run "journalctl -b --no-pager -n 40 -u capture-agent -u record-server" >&2 || true
    fail "the agent did not connect"
fi
run "$export_token; recordctl agents" >&2
step "running as: $(run 'ps -o user=,comm= -C record-server,capture-agent | tr -s " " | paste -sd ";"')"

step "§7: recordctl start, 10 s, recordctl stop"
# "started session ID on agent cam-a"
start_session() {
    run "$export_token; recordctl start --agent cam-a --wait 5" | awk '{for (i = 1; i < NF; i++) if ($i == "session") { print $(i + 1); exit }}'
}
recording_of() {
    run "$export_token; recordctl recordings --json" | python3 -c '
import json, sys
print(next(r["path"] for r in json.load(sys.stdin)["recordings"] if r["session_id"] == sys.argv[1]))' "$1"
}
# ffprobe and ffmpeg on this host: every packet read, no decoding errors, and (with --full)
# frame counts that match the file's duration: 30 fps per camera, 50 Opus packets per second.
check_file() {
    local file=$root$1 full=${2:-}
    ffprobe -v error -count_packets -show_entries stream=codec_name,width,height,nb_read_packets,duration -of csv=p=0 "$file"
    local errors
    errors=$(ffmpeg -nostdin -v error -i "$file" -f null - 2>&1 | head -5)
    [[ -z $errors ]] || fail "ffmpeg decoding printed: $errors"
    echo "ffmpeg -v error: no errors"
    [[ -z $full ]] && return 0
    ffprobe -v error -count_packets -show_entries stream=codec_name,nb_read_packets,duration -of json "$file" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["streams"]:
    codec, seconds, got = s["codec_name"], float(s["duration"]), int(s["nb_read_packets"])
    expected = seconds * (30 if codec == "h264" else 50)
    ok = abs(got - expected) <= max(3, 0.02 * expected)
    print("  %s: %d packets for %.2f s (expected %.0f)%s" % (codec, got, seconds, expected, "" if ok else "  <-- MISMATCH"))
    if not ok: sys.exit(1)' || fail "packet counts do not match the duration"
}

session=$(start_session)
[[ -n $session ]] || fail "recordctl start printed no session id"
sleep 10
run "$export_token; recordctl stop $session" >&2
sleep 2
path=$(recording_of "$session")
step "recording: $path"
run "$export_token; recordctl recordings" >&2

step "stopping both services (SIGTERM, graceful)"
# Stops both units; each one's systemd Result must be among the allowed ("unit:result" words).
stop_both() {
    local allowed=" $1 " unit result status
    run "systemctl stop capture-agent record-server"
    for unit in record-server capture-agent; do
        result=$(run "systemctl show -p Result --value $unit")
        status=$(run "systemctl show -p ExecMainStatus --value $unit")
        echo "$unit: Result=$result ExecMainStatus=$status"
        [[ $allowed == *" $unit:$result "* ]] || fail "$unit stopped with $result (journalctl -u $unit)"
    done
}
stop_both "record-server:success capture-agent:success"
run "journalctl -b --no-pager -u record-server -u capture-agent | grep -Ei 'denied|EPERM|operation not permitted' || true" >&2
drops=$(run "journalctl -b --no-pager -u capture-agent | grep -E 'dropped|source lost' || true")
[[ -z $drops ]] || fail "the agent dropped samples: $(head -3 <<<"$drops")"
run "journalctl -b --no-pager -u capture-agent | grep -E 'faster than real time' || true" >&2

step "ffprobe on this host"
check_file "$path" --full

wait_for_agent() {
    for _ in $(seq 60); do
        run "$export_token; recordctl agents 2>/dev/null | grep -q cam-a" && return 0
        sleep 0.5
    done
    fail "the agent did not connect"
}

step "systemctl restart record-server during a recording (the session resumes into the same file)"
run "systemctl start record-server capture-agent"
wait_for_agent
third=$(start_session)
[[ -n $third ]] || fail "recordctl start printed no session id (restart check)"
sleep 4
run "systemctl restart record-server"
sleep 6
wait_for_agent
run "$export_token; recordctl stop $third" >&2
sleep 2
third_path=$(recording_of "$third")
run "$export_token; recordctl recordings" >&2
run "journalctl -b --no-pager -u record-server -o cat | grep -E 'suspended|resumed after a server restart' | tail -2" >&2
status=$(run "$export_token; recordctl recordings --json" | python3 -c '
import json, sys
print(next(r["status"] for r in json.load(sys.stdin)["recordings"] if r["session_id"] == sys.argv[1]))' "$third")
[[ $status == completed ]] || fail "the restarted recording is $status, not completed"
check_file "$third_path" --full

step "both services stopped during a recording (the agent must exit within TimeoutStopSec)"
second=$(start_session)
[[ -n $second ]] || fail "recordctl start printed no session id (second recording)"
sleep 5
started=$(date +%s)
# The agent may get the server's confirmation (success) or give up after its stop timeout
# (exit-code, status 1); only a SIGKILL after TimeoutStopSec (Result=timeout) is a failure.
stop_both "record-server:success capture-agent:success capture-agent:exit-code"
echo "both stopped after $(( $(date +%s) - started )) s"
run "journalctl -b --no-pager -u capture-agent -n 3 -o cat" >&2
run "systemctl start record-server"
for _ in $(seq 40); do run "$export_token; recordctl recordings >/dev/null 2>&1" && break; sleep 0.25; done
second_path=$(recording_of "$second")
run "$export_token; recordctl recordings" >&2
run "systemctl stop record-server"
step "second recording: $second_path"
check_file "$second_path"

step "systemd-analyze security"
run "systemd-analyze security --no-pager record-server capture-agent" | tail -4

run "systemctl poweroff" || true
wait "$nspawn" || true
trap - EXIT
echo "systemd-check: OK"

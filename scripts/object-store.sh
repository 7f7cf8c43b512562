#!/usr/bin/env bash
# A real S3 endpoint for tests and development: a single-node Ceph cluster (one monitor, one
# memstore OSD, one RADOS Gateway) from Debian 12's packages, with no systemd and nothing
# outside DIR (config, keyrings, monitor and OSD data, logs, pid files, admin sockets).
#
#   scripts/object-store.sh start DIR   # DIR must be new or empty; prints the endpoint
#   scripts/object-store.sh stop DIR    # stops what `start DIR` started; safe to repeat
#
# When S3 answers, `start` writes DIR/endpoint (http://127.0.0.1:PORT), DIR/access-key and
# DIR/secret-key (mode 0600) for an S3 user created with radosgw-admin. Ports are free ones
# picked at start and every instance has its own fsid, so several can run side by side.
# Needs root (the daemons run as the caller) and: apt-get install ceph-mon ceph-osd radosgw
# ceph-common (scripts/bootstrap.sh with BOOTSTRAP_FOR_TESTS=1 installs them).
# OBJECT_STORE_TIMEOUT (seconds, default 120) bounds the wait for S3 to answer.
# OBJECT_STORE_OWNER_PID=PID: a watcher stops the store once that process is gone (a test
# process that crashed or was killed leaves no daemons behind).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR | stop DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
command=$1
dir=$2
timeout=${OBJECT_STORE_TIMEOUT:-120}

# The daemons, in the order they start (and the reverse of the order they stop in); the owner
# watcher, if any, stops first.
daemons=(mon.a osd.0 client.rgw)
stopped=("${daemons[@]}" watcher)

# The pid in DIR/run/NAME.pid if that process is alive and is ours: its command line names
# this DIR's ceph.conf, so a pid reused by another process after a crash is never signalled.
live_pid() {
  local file="$dir/run/$1.pid" pid
  [ -s "$file" ] || return 1
  pid=$(cat "$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/ceph.conf" || return 1
  echo "$pid"
}

# Whether process PID still runs: a zombie has finished (it waits only for a parent that may
# never reap it, such as a container's PID 1 that is not an init).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ ${stat##*) } != Z* ]]
}

stop() {
  local name pid waited
  for ((i = ${#stopped[@]} - 1; i >= 0; i--)); do
    name=${stopped[i]}
    # (A stale pid file goes too; the watcher, once it runs this stop, no longer matches.)
    pid=$(live_pid "$name") || { rm -f "$dir/run/$name.pid"; continue; }
    kill -TERM "$pid" 2>/dev/null || true
    # A daemon is not our child (ceph daemons fork into the background), so wait by polling.
    for ((waited = 0; waited < 100; waited++)); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      echo "object-store: $name (pid $pid) did not stop within 10 s of SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      for ((waited = 0; waited < 50; waited++)); do
        alive "$pid" || break
        sleep 0.1
      done
    fi
    rm -f "$dir/run/$name.pid"
  done
}

case "$command" in
  stop)
    [ -d "$dir" ] || exit 0
    dir=$(cd "$dir" && pwd -P)
    stop
    exit 0
    ;;
  start) ;;
  *) usage ;;
esac

# Signals the caller blocks or ignores stay so in every process started from here (a test
# process's worker threads block SIGTERM): the daemons would then never see `stop`'s SIGTERM.
# So start runs again once with every signal unblocked and at its default action.
if [ -z "${OBJECT_STORE_SIGNALS_RESET:-}" ] && command -v python3 >/dev/null 2>&1; then
  export OBJECT_STORE_SIGNALS_RESET=1
  exec python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
    signal.signal(number, signal.SIG_DFL)
os.execvp("bash", ["bash"] + sys.argv[1:])' "$0" "$@"
fi

for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool curl python3; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "object-store: $tool not found; install Ceph with: apt-get install ceph-mon ceph-osd radosgw ceph-common" \
      "(or BOOTSTRAP_FOR_TESTS=1 source scripts/bootstrap.sh)" >&2
    exit 1
  }
done
[ "$(id -u)" -eq 0 ] || { echo "object-store: must run as root (the Ceph daemons need it without systemd's setup)" >&2; exit 1; }

mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
for name in "${daemons[@]}"; do
  if pid=$(live_pid "$name"); then
    echo "object-store: $dir is already running ($name is pid $pid); stop it first: $0 stop $dir" >&2
    exit 1
  fi
done
if [ -n "$(ls -A "$dir")" ]; then
  echo "object-store: $dir is not empty (left from an earlier run?); start needs a new or empty directory" >&2
  exit 1
fi

# The daemons must not inherit the caller's open descriptors: Foundation's Process (the tests')
# learns that its child exited when a socket it passed down closes, and a daemon holding it
# would keep the caller waiting for as long as the store runs.
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done

started_at=$(date +%s.%N)
# Whatever happens from here on, a failed start leaves nothing running (its logs stay in DIR).
trap 'status=$?; if [ $status -ne 0 ]; then stop; fi' EXIT

mkdir -p "$dir"/{run,log,mon/a,osd/0,rgw,crash,tmp}
if [ -n "${OBJECT_STORE_OWNER_PID:-}" ]; then
  self=$(cd "$(dirname "$0")" && pwd -P)/$(basename "$0")
  # Its own session, so the owner's terminal or process group going away does not take it along;
  # its command line names DIR/ceph.conf like the daemons', for live_pid.
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec bash "$2" stop "$3"' \
    "$dir/ceph.conf" "$OBJECT_STORE_OWNER_PID" "$self" "$dir" </dev/null >>"$dir/log/watcher.log" 2>&1 &
  echo $! >"$dir/run/watcher.pid"
fi
# Three distinct free loopback ports, all held at once so none is handed out twice.
read -r mon_v2 mon_v1 rgw_port < <(python3 -c '
import socket
held = []
for _ in range(3):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); held.append(s)
print(*[s.getsockname()[1] for s in held])')
fsid=$(uuidgen 2>/dev/null || cat /proc/sys/kernel/random/uuid)
conf=$dir/ceph.conf

# Authentication is off (auth = none): this cluster only listens on loopback, and it saves a
# keyring per daemon. S3 authentication (SigV4 with the user's keys) is RGW's own and stays on.
# Every path a daemon or a client tool would default to /var/{lib,log,run}/ceph is set here.
cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
keyring = $dir/\$name.keyring
run dir = $dir/run
pid file = $dir/run/\$name.pid
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
log to stderr = false
err to stderr = true
crash dir = $dir/crash
tmp dir = $dir/tmp
mon cluster log file = $dir/log/cluster.log
# One OSD: every pool keeps one copy, in few placement groups, and no warnings about it.
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false

[mon]
mon data = $dir/mon/\$id

[osd]
osd data = $dir/osd/\$id
# In memory: no block device, no fsync, and gone when the OSD stops (a test store).
osd objectstore = memstore
memstore device bytes = ${OBJECT_STORE_BYTES:-4294967296}

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $dir/rgw
rgw thread pool size = 64
# radosgw defaults to a "secure" monitor connection, which needs cephx's session keys: with
# auth none it never connects (monclient: get_initial_auth_request returned -13).
ms mon client mode = crc
# Bounded: a radosgw that cannot reach the monitor fails instead of waiting 300 s.
client mount timeout = 30
EOF

ceph-authtool --create-keyring "$dir/mon.a.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.a.keyring" 2>>"$dir/log/setup.log"
ceph-mon -c "$conf" -i a >>"$dir/log/setup.log" 2>&1

# The monitor answers once it has formed its quorum of one.
ceph_cli() { timeout 30 ceph -c "$conf" --connect-timeout 10 "$@" 2>>"$dir/log/setup.log"; }
osd_uuid=$(uuidgen 2>/dev/null || cat /proc/sys/kernel/random/uuid)
osd_id=$(ceph_cli osd new "$osd_uuid") || {
  echo "object-store: the monitor did not answer; see $dir/log/mon.a.log and $dir/log/setup.log" >&2
  exit 1
}
[ "$osd_id" = 0 ] || { echo "object-store: expected osd id 0, got '$osd_id'" >&2; exit 1; }
ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osd_uuid" 2>>"$dir/log/setup.log" >/dev/null
ceph-osd -c "$conf" -i 0 >>"$dir/log/setup.log" 2>&1
radosgw -c "$conf" -n client.rgw >>"$dir/log/setup.log" 2>&1

deadline=$(($(date +%s) + timeout))
endpoint=http://127.0.0.1:$rgw_port
# Anonymous GET / answers (200 with an empty bucket list) once RGW has its pools.
until [ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$endpoint/")" = 200 ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "object-store: S3 at $endpoint did not answer within ${timeout} s; see $dir/log/client.rgw.log" \
      "(and $dir/log/osd.0.log, $dir/log/mon.a.log)" >&2
    exit 1
  fi
  for name in "${daemons[@]}"; do
    live_pid "$name" >/dev/null || {
      echo "object-store: $name is not running; see $dir/log/$name.log and $dir/log/setup.log" >&2
      exit 1
    }
  done
  sleep 0.5
done

# Keys of the same shapes as AWS's (20 upper-case letters and digits; 40 characters).
access_key=$(python3 -c 'import secrets, string; print("".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(20)))')
secret_key=$(python3 -c 'import secrets; print(secrets.token_urlsafe(30)[:40])')
timeout 60 radosgw-admin -c "$conf" -n client.admin user create --uid=tests --display-name="object-store.sh tests" \
  --access-key="$access_key" --secret-key="$secret_key" >>"$dir/log/setup.log" 2>&1 || {
  echo "object-store: radosgw-admin user create failed; see $dir/log/setup.log" >&2
  exit 1
}
# The user is cached by RGW only after it is read from RADOS: a signed request proves it works.
# (curl signs SigV4 but does not send the payload hash S3 requires: it is given, as the empty body's.)
until [ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access_key:$secret_key" \
  -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$endpoint/")" = 200 ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "object-store: S3 at $endpoint refuses the new user's signed requests after ${timeout} s; see $dir/log/client.rgw.log" >&2
    exit 1
  fi
  sleep 0.5
done

(umask 077 && printf '%s\n' "$access_key" >"$dir/access-key" && printf '%s\n' "$secret_key" >"$dir/secret-key")
printf '%s\n' "$endpoint" >"$dir/endpoint"
echo "object-store: S3 at $endpoint after $(python3 -c "import time; print(f'{time.time() - $started_at:.1f}')") s (keys in $dir/access-key, $dir/secret-key)" >&2
echo "$endpoint"

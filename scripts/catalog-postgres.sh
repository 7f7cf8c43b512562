#!/usr/bin/env bash
# A throwaway PostgreSQL 15 (Debian's) for a shared catalog in tests and development.
#
#   scripts/catalog-postgres.sh start DIR   # cluster in DIR, prints the catalog URL
#   scripts/catalog-postgres.sh stop DIR
#
# start: initdb into DIR/data, listening on a Unix socket in DIR and on 127.0.0.1 at a free
# port; a role `recorder` (password in DIR/password, mode 0600) owns a database `catalog`.
# Writes DIR/url (TCP, password file: what a record-server is given) and DIR/socket-url
# (the superuser over the socket, trusted: what tests use to create databases).
# PostgreSQL refuses to run as root: as root the cluster runs as the `postgres` OS user.
# fsync is off (a test cluster's data is thrown away); CATALOG_POSTGRES_FSYNC=on for benchmarks.
set -euo pipefail
# The cluster outlives this script: it must not inherit what our caller left open (Foundation's
# Process waits until every copy of its child's hidden descriptor is closed, so a test that
# ran this script would wait for PostgreSQL to exit). Keep stdio and bash's own script fd.
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if (( fd > 2 && fd != 255 )); then eval "exec $fd>&-" 2>/dev/null || true; fi
done
command=${1:-}
dir=${2:-}
if [[ -z "$command" || -z "$dir" ]]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 64
fi
bin=/usr/lib/postgresql/15/bin
if [[ ! -x $bin/initdb ]]; then
  echo "$0: PostgreSQL 15 is not installed ($bin/initdb missing); run: apt-get install -y postgresql-15" >&2
  exit 69
fi
as_owner() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$command" in
start)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ -f $dir/data/postmaster.pid ]] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    echo "$0: a cluster already runs in $dir; stop it first: $0 stop $dir" >&2
    exit 1
  fi
  rm -rf "$dir/data"
  [[ $(id -u) == 0 ]] && chown postgres: "$dir"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  password=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  (umask 077; printf '%s\n' "$password" > "$dir/password")
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { echo "$0: initdb failed; see $dir/initdb.log" >&2; exit 1; }
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 \
    -o "-k $dir -p $port -c listen_addresses=127.0.0.1 -c fsync=${CATALOG_POSTGRES_FSYNC:-off}" start >/dev/null \
    || { echo "$0: PostgreSQL did not start; see $dir/postgres.log" >&2; exit 1; }
  as_owner "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE ROLE recorder LOGIN PASSWORD '$password'" -c "CREATE DATABASE catalog OWNER recorder" >/dev/null
  echo "$port" > "$dir/port"
  echo "postgresql://recorder@127.0.0.1:$port/catalog?password_file=$dir/password&sslmode=disable" > "$dir/url"
  echo "postgresql://postgres@/postgres?host=$dir&port=$port" > "$dir/socket-url"
  cat "$dir/url"
  ;;
stop)
  if [[ -f $dir/data/postmaster.pid ]]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  fi
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 64
  ;;
esac

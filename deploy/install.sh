#!/usr/bin/env bash
# Install record-server and/or capture-agent on this host (Debian 12), from the output of
#
#   swift build -c release --static-swift-stdlib      # as a normal user, in the repository
#
# Usage:  sudo deploy/install.sh server|agent|both
#
# What it does (every step is idempotent; existing configuration, keys and tokens are never
# overwritten):
#   - creates the system user record-server and/or capture-agent (no login, no home);
#     capture-agent is added to the groups video and audio;
#   - installs the binaries into /usr/local/bin (record-server / capture-agent, and recordctl);
#   - creates /etc/record-server (+ tls/) or /etc/capture-agent, root-owned and readable by the
#     service's group only;
#   - server: generates /etc/record-server/admin.token (0600, owned by record-server) and a
#     minimal /etc/record-server/record-server.json that points at it;
#     agent: copies deploy/capture-agent.example.json to /etc/capture-agent/capture-agent.json
#     (edit it: agentID, server, sources);
#   - installs the systemd unit(s) and runs `systemctl daemon-reload`.
# It does NOT create certificates and does NOT enable or start anything: see docs/operations.md.
#
# Environment: BIN_DIR (default: <repo>/.build/release), PREFIX (default: /usr/local).
set -euo pipefail

usage() { echo "usage: sudo $0 server|agent|both" >&2; exit 2; }
[[ $# -eq 1 ]] || usage
case "$1" in
    server) roles=(server) ;;
    agent)  roles=(agent) ;;
    both)   roles=(server agent) ;;
    *)      usage ;;
esac

if [[ $(id -u) -ne 0 ]]; then
    echo "install.sh: must run as root (sudo $0 $1)" >&2
    exit 1
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$repo/.build/release}
PREFIX=${PREFIX:-/usr/local}
UNIT_DIR=/etc/systemd/system

need_binary() {
    if [[ ! -x $BIN_DIR/$1 ]]; then
        echo "install.sh: $BIN_DIR/$1 not found; build first (as a normal user):" >&2
        echo "  swift build -c release --static-swift-stdlib" >&2
        exit 1
    fi
}

# create_user NAME: a system user with its own group, no home directory and no login shell.
create_user() {
    if id -u "$1" >/dev/null 2>&1; then
        echo "user $1 exists"
    else
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
                --shell /usr/sbin/nologin "$1"
        echo "created user $1"
    fi
}

install_bin() {
    install -m 0755 -o root -g root "$BIN_DIR/$1" "$PREFIX/bin/$1"
    echo "installed $PREFIX/bin/$1"
}

random_token() {
    # 32 random bytes as 64 hex characters (no openssl needed).
    od -An -N32 -tx1 /dev/urandom | tr -d ' \n'
}

install_server() {
    need_binary record-server
    need_binary recordctl
    create_user record-server
    install_bin record-server
    install_bin recordctl
    # Root owns the configuration; the service reads it through its group.
    install -d -m 0750 -o root -g record-server /etc/record-server /etc/record-server/tls
    if [[ ! -e /etc/record-server/admin.token ]]; then
        # The server refuses to trust a token file readable by group or others, and must read
        # it itself: 0600, owned by record-server.
        (umask 077; random_token > /etc/record-server/admin.token)
        chown record-server:record-server /etc/record-server/admin.token
        chmod 0600 /etc/record-server/admin.token
        echo "created /etc/record-server/admin.token"
    fi
    if [[ ! -e /etc/record-server/record-server.json ]]; then
        # Every option has a default (docs/configuration.md); list only what differs.
        (umask 027; cat > /etc/record-server/record-server.json <<'JSON'
{
  "admin": { "tokenFile": "/etc/record-server/admin.token" },
  "dataDirectory": "/var/lib/record-server"
}
JSON
        )
        chown root:record-server /etc/record-server/record-server.json
        chmod 0640 /etc/record-server/record-server.json
        echo "created /etc/record-server/record-server.json (see deploy/record-server.example.json for every option)"
    fi
    install -m 0644 -o root -g root "$repo/deploy/record-server.service" "$UNIT_DIR/record-server.service"
    echo "installed $UNIT_DIR/record-server.service"
}

install_agent() {
    need_binary capture-agent
    need_binary recordctl
    create_user capture-agent
    # Also set by the unit (SupplementaryGroups); here so that `sudo -u capture-agent
    # capture-agent devices` sees the same devices as the service.
    usermod -a -G video,audio capture-agent
    install_bin capture-agent
    install_bin recordctl
    install -d -m 0750 -o root -g capture-agent /etc/capture-agent
    if [[ ! -e /etc/capture-agent/capture-agent.json ]]; then
        install -m 0640 -o root -g capture-agent "$repo/deploy/capture-agent.example.json" \
                /etc/capture-agent/capture-agent.json
        echo "created /etc/capture-agent/capture-agent.json from the example: edit agentID, server and sources"
    fi
    install -m 0644 -o root -g root "$repo/deploy/capture-agent.service" "$UNIT_DIR/capture-agent.service"
    echo "installed $UNIT_DIR/capture-agent.service"
}

for role in "${roles[@]}"; do
    "install_$role"
done
systemctl daemon-reload
echo "done. Next: certificates and configuration (docs/operations.md), then systemctl enable --now ..."

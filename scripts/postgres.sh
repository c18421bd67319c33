#!/usr/bin/env bash
# A throwaway PostgreSQL for the rendezvous store's tests: a new cluster in a temporary folder,
# listening on loopback only, started for COMMAND and removed after it.
#
#   scripts/postgres.sh COMMAND [ARG...]
#
# COMMAND runs with VIMP_TEST_POSTGRES=postgres://postgres@127.0.0.1:PORT/postgres, e.g.
#
#   scripts/postgres.sh cargo test -p vimp-ranks --locked -- --ignored
#
# PostgreSQL comes from Debian's packages (installed here when missing: needs root). Run as
# root, the cluster runs as the `postgres` user the package makes (PostgreSQL refuses root).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "postgres.sh: no PostgreSQL server here; install Debian's postgresql package (as root)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi

dir=$(mktemp -d /tmp/vimp-postgres.XXXXXX)
as_owner() { "$@"; }
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$dir"
  as_owner() { runuser -u postgres -- "$@"; }
fi
stop() {
  as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2
  exit 1
}
# The first free port from 55432 on; the socket in the cluster's own folder.
port=55432
until as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=on -c max_connections=200" start >/dev/null; do
  port=$((port + 1))
  if [ $port -gt 55532 ]; then
    echo "postgres.sh: the server did not start; its log:" >&2
    cat "$dir/server.log" >&2
    exit 1
  fi
done
export VIMP_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
echo "postgres.sh: PostgreSQL ($("$bindir/postgres" --version | awk '{print $3}')) at $VIMP_TEST_POSTGRES" >&2
"$@"

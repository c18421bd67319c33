#!/usr/bin/env bash
# The rendezvous's identities and top under load, on SQLite and on PostgreSQL: `vimp
# ranks-bench` against a `vimp signal` of its own on loopback, once on a new SQLite file and once
# on a throwaway PostgreSQL (scripts/postgres.sh). Not run in CI (it takes minutes).
#
#   scripts/ranks-load.sh [--identities N] [--rooms N] [--players N] [--rounds N]
#                         [--concurrency N] [--only sqlite|postgres] [VIMP]
#
# Defaults: 10,000 identities, 500 rooms of 8 players at once, 4 rounds each (16,000 reports),
# 64 requests in flight. VIMP is the binary to run (default: a release build, made here).
# Prints a line of JSON per database: registrations, tokens and reports a second, their p50 and p99
# latency, the rounds recorded and the server's CPU seconds per phase.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}"

args=() only="" vimp=""
while [ $# -gt 0 ]; do
  case "$1" in
    --identities|--rooms|--players|--rounds|--concurrency) args+=("$1" "$2"); shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "ranks-load.sh: unknown flag $1" >&2; exit 2 ;;
    *) vimp="$1"; shift ;;
  esac
done
if [ -z "$vimp" ]; then
  cargo build --release -p vimp --locked >&2
  vimp="$CARGO_TARGET_DIR/release/vimp"
fi

if [ -z "$only" ] || [ "$only" = sqlite ]; then
  dir=$(mktemp -d /tmp/vimp-ranks-load.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
  echo "== SQLite ($dir/rendezvous.db)" >&2
  "$vimp" ranks-bench --db "$dir/rendezvous.db" --json ${args[@]+"${args[@]}"}
fi
if [ -z "$only" ] || [ "$only" = postgres ]; then
  echo "== PostgreSQL (scripts/postgres.sh)" >&2
  # shellcheck disable=SC2016
  scripts/postgres.sh sh -c '"$0" ranks-bench --db "$VIMP_TEST_POSTGRES" --json "$@"' "$vimp" ${args[@]+"${args[@]}"}
fi

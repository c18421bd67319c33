#!/usr/bin/env bash
# Network figures of a real match over WebRTC, measured inside a network namespace of its own
# (loopback only: not one packet leaves this machine). Not run in CI.
#
#   scripts/net-figures.sh [VIMP_BINARY]
#
# Prints: join_ms of 10 joins (p50, min, max); per-client snapshot bytes per second in a
# 4-player match; the host's CPU with 0 and with 4 clients, and the difference per client.
set -euo pipefail
cd "$(dirname "$0")/.."
vimp="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp}"
[ -x "$vimp" ] || { echo "build it first: cargo build --release" >&2; exit 2; }

if [ -z "${VIMP_IN_NETNS:-}" ]; then
  exec unshare -rn env VIMP_IN_NETNS=1 bash -c \
    'ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec "$0" "$@"' "$0" "$vimp"
fi

tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
# The rendezvous's database in the scratch directory, not the data folder of whoever runs this.
export VIMP_DATA_DIR="$tmp/data"
"$vimp" signal --bind 127.0.0.1:3536 > "$tmp/signal.log" &
for _ in $(seq 100); do grep -q listening "$tmp/signal.log" 2>/dev/null && break; sleep 0.1; done
sig=ws://127.0.0.1:3536

host() { # host CODE SECONDS OUT — starts a host, waits for its code line; its pid is in $host_pid
  "$vimp" host --headless --signal "$sig" --code "$1" --map maps/test-small.json --seconds "$2" --json > "$3" &
  host_pid=$!
  for _ in $(seq 100); do grep -q "lobby code" "$3" 2>/dev/null && break; sleep 0.1; done
}

# 10 joins, one after the other.
host ABCDEF 60 "$tmp/host-joins.json"
for i in $(seq 10); do
  "$vimp" join ABCDEF --signal "$sig" --headless --name "p$i" --seconds 2 --json > "$tmp/join$i.json"
done
python3 - "$tmp" <<'PY'
import json, sys, statistics, glob
ms = sorted(json.load(open(f))["join_ms"] for f in glob.glob(sys.argv[1] + "/join*.json"))
print(f"join_ms over {len(ms)} joins: p50 {statistics.median(ms):.0f}, min {ms[0]:.0f}, max {ms[-1]:.0f}")
PY

# The host's CPU alone, then with 4 clients, over the same 20 s.
host BCDEFG 20 "$tmp/host-idle.json"
wait "$host_pid"
host CDEFGH 24 "$tmp/host-four.json"
pids=()
for i in 1 2 3 4; do
  "$vimp" join CDEFGH --signal "$sig" --headless --name "c$i" --seconds 20 --json > "$tmp/four$i.json" &
  pids+=($!)
done
wait "${pids[@]}" "$host_pid"
python3 - "$tmp" <<'PY'
import json, sys, glob
def load(p):
    t = open(p).read(); return json.loads(t[t.find("{", t.find("\n{") if "\n{" in t else 0):])
d = sys.argv[1]
clients = [json.load(open(f)) for f in sorted(glob.glob(d + "/four*.json"))]
print("4-player match, per client: snapshots/s %s, bytes in/s %s" % (
    [round(c["snapshots_per_s"], 1) for c in clients], [round(c["bytes_in_per_s"]) for c in clients]))
idle, four = load(d + "/host-idle.json"), load(d + "/host-four.json")
print(f"host CPU: {idle['cpu_percent']:.1f}% with no client, {four['cpu_percent']:.1f}% with 4 "
      f"→ {(four['cpu_percent'] - idle['cpu_percent']) / 4:.2f}% of a core per client; "
      f"host upload {four['bytes_out_per_s']:.0f} B/s")
PY

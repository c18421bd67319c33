#!/usr/bin/env bash
# Join figures across the home-network lab (scripts/lab.sh), release build. Not run in CI.
#
#   scripts/lab-figures.sh [TRIES] [VIMP_BINARY]
#
# For each pairing of homes (both on the public segment; two port-preserving NATs; two
# symmetric NATs, through TURN) a host in home a and TRIES joins (default 20) from home b, one
# after the other: how many got in, join_ms (start of `vimp join` to the first snapshot) p50,
# p99 and max, how the link went, and the RTT to the host (one longer stay's p50).
set -euo pipefail
cd "$(dirname "$0")/.."
tries="${1:-20}"
vimp="${2:-${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp}"
[ -x "$vimp" ] || { echo "build it first: cargo build --release" >&2; exit 2; }

if [ -n "${LAB_SIGNAL:-}" ]; then
  # Inside a lab: the host in a, the joins from b.
  ip netns exec a "$LAB_VIMP" host --headless --signal "$LAB_SIGNAL" --code ABCDEF \
    --map maps/test-small.json --max-players 64 --seconds 3600 > "$LAB_DIR/host.out" 2>&1 &
  for _ in $(seq 200); do grep -q "lobby code" "$LAB_DIR/host.out" 2>/dev/null && break; sleep 0.05; done
  for i in $(seq "$tries"); do
    ip netns exec b "$LAB_VIMP" join "$LAB_SIGNAL/ABCDEF" --headless --name "p$i" --seconds 2 \
      --join-timeout 4 --json > "$LAB_DIR/join$i.json" 2>/dev/null || true
  done
  # The round trip to the host, from one longer stay (the host pings every 3 s).
  ip netns exec b "$LAB_VIMP" join "$LAB_SIGNAL/ABCDEF" --headless --name rtt --seconds 14 \
    --json > "$LAB_DIR/rtt.json" 2>/dev/null || true
  kill %1
  /usr/bin/env python3 - "$LAB_DIR" "$tries" "$PAIRING" <<'PY'
import glob, json, sys
d, tries, pairing = sys.argv[1], int(sys.argv[2]), sys.argv[3]
reports = []
for f in glob.glob(d + "/join*.json"):
    try:
        reports.append(json.load(open(f)))
    except ValueError:
        pass
ok = [r for r in reports if r.get("joined") and r.get("join_ms") is not None]
ms = sorted(r["join_ms"] for r in ok)
paths = sorted({r.get("host_path") for r in ok})
try:
    rtt = json.load(open(d + "/rtt.json")).get("rtt_ms_p50")
except ValueError:
    rtt = None
def pct(p):
    return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))] if ms else float("nan")
print(f"{pairing:<34} {len(ok):>2}/{tries} joined  join_ms p50 {pct(50):6.0f}  p99 {pct(99):6.0f}  "
      f"max {ms[-1] if ms else float('nan'):6.0f}  path {'/'.join(map(str, paths))}  "
      f"rtt {rtt if rtt is not None else float('nan'):5.1f} ms")
PY
  exit 0
fi

for pairing in "public public" "cone cone" "symmetric symmetric"; do
  set -- $pairing
  PAIRING="$1 ↔ $2" scripts/lab.sh --vimp "$vimp" --home "a:$1" --home "b:$2" -- \
    env PAIRING="$1 ↔ $2" "$0" "$tries" "$vimp"
done

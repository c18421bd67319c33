#!/usr/bin/env bash
# Kills the host of a real WebRTC match with SIGKILL at a random moment, N times, and
# prints how many matches went on, the clients' resume times (host loss noticed → first
# snapshot from the new host), freezes (crash → resumed play: the host last heard → first
# snapshot from the new host) and rewinds (game time lost: the newest tick seen from the
# old host minus the tick the new host's claim continues from). Not run in CI.
#
#   scripts/migration-figures.sh [RUNS=20]
#   PROFILE=debug scripts/migration-figures.sh   # the dev build (no release build needed)
#
# Each run: `vimp signal`, a headless host with 2 bots and two headless clients, all
# inside a network namespace of their own with only loopback (no packet leaves the
# machine); the host is killed 0–6 s after both clients shadow it.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
profile=${PROFILE:-release}
if [[ $profile == release ]]; then cargo build --release --bin vimp >&2; else cargo build --bin vimp >&2; fi
bin=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/$profile/vimp
out=$(mktemp -d)
for i in $(seq 1 "$runs"); do
    dir="$out/$i"
    mkdir -p "$dir"
    delay=$(python3 -c "import random; print(round(random.uniform(0, 6), 2))")
    unshare -rn bash -c '
        set -u
        ip link set lo up; ip link set lo multicast on; ip route add 224.0.0.0/4 dev lo
        bin=$1; dir=$2; delay=$3
        export VIMP_DATA_DIR=$dir/data
        "$bin" signal --bind 127.0.0.1:3536 > "$dir/signal.out" 2>&1 &
        for _ in $(seq 100); do grep -q "listening on" "$dir/signal.out" && break; sleep 0.05; done
        "$bin" host --headless --signal ws://127.0.0.1:3536 --code K7M-P2Q --bots 2 --map maps/test-small.json --seconds 60 > "$dir/host.out" 2>&1 &
        host=$!
        for _ in $(seq 100); do grep -q "lobby code" "$dir/host.out" && break; sleep 0.05; done
        "$bin" join k7mp2q --signal ws://127.0.0.1:3536 --headless --name ann --seconds 25 --json > "$dir/ann.json" 2> "$dir/ann.err" &
        a=$!
        "$bin" join k7mp2q --signal ws://127.0.0.1:3536 --headless --name bob --seconds 25 --json > "$dir/bob.json" 2> "$dir/bob.err" &
        b=$!
        for _ in $(seq 400); do
            grep -q "shadowing" "$dir/ann.err" && grep -q "shadowing" "$dir/bob.err" \
                && grep -q "linked to 2" "$dir/ann.err" && grep -q "linked to 2" "$dir/bob.err" && break
            sleep 0.05
        done
        sleep "$delay"
        kill -9 "$host"
        wait "$a" "$b" || true
        kill %1 2>/dev/null || true
    ' _ "$bin" "$dir" "$delay" || true
    echo "run $i: killed ${delay}s after both shadowed" >&2
done
python3 - "$out" "$runs" <<'PY'
import json, os, sys
out, runs = sys.argv[1], int(sys.argv[2])
ok, resume, rewind, freeze = 0, [], [], []
for i in range(1, runs + 1):
    reports = []
    for name in ("ann", "bob"):
        try:
            reports.append(json.load(open(os.path.join(out, str(i), name + ".json"))))
        except Exception:
            reports.append(None)
    # The match went on after the kill: a host change, then frames (a client that ends
    # up hosting leaves first at the end, so the other may see a second change then).
    # (A normal close, 1000, is the client leaving at its --seconds: the one still hosting at
    # the end finds nobody to hand the match to once the other has left first.)
    good = all(r and r.get("close_code") in (None, 1000) and (r.get("migrations") or 0) >= 1
               and ((r.get("snapshots_after_host_change") or 0) > 100 or (r.get("migrations") or 0) >= 2)
               for r in reports)
    ok += good
    for r in reports:
        if r and r.get("resume_ms") is not None:
            resume.append(r["resume_ms"])
        if r and r.get("rewind_ms") is not None:
            rewind.append(r["rewind_ms"])
        if r and r.get("freeze_ms") is not None:
            freeze.append(r["freeze_ms"])
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None
print(json.dumps({"runs": runs, "matches_that_went_on": ok, "resume_ms_p50": pct(resume, 50),
                  "resume_ms_p99": pct(resume, 99), "resume_samples": len(resume),
                  "rewind_ms_p50": pct(rewind, 50), "rewind_ms_p99": pct(rewind, 99),
                  "rewind_samples": len(rewind), "freeze_ms_p50": pct(freeze, 50),
                  "freeze_ms_p99": pct(freeze, 99), "logs": out}))
PY

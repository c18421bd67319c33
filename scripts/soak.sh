#!/usr/bin/env bash
# The soak: a real match in the home-network lab (`scripts/lab.sh`) for SECONDS (300 by
# default), and its figures. Not run in CI (it takes minutes).
#
#   sudo scripts/soak.sh [SECONDS=300]
#
# Three homes behind cone NATs: the host's home `a` on a line that loses 2 % of packets each
# way (10 ± 2 ms) with a 10 Mbit/s uplink cap, holding a headless host (2 bots, the default
# map) and one player; homes `b` and `c` (10 ± 2 ms lines) with three players each. Every
# player is a headless client that predicts its own tank and says a numbered chat line every
# 4 s. A third of the way in, one player in `c` is killed (SIGKILL) and started again 2 s
# later with its token file: it must be back in its slot.
#
# Prints JSON: drops (sessions that ended other than by leaving at the end, plus
# reconnections), panics (in any log), chat lines said and delivered (every line to every
# other player who was there throughout), corrections p50/p99 and per client, the restarted
# player's way back (its start → its first snapshot) and whether its slot came back, false takeovers
# (a player took the match over though its host was alive, which then stepped down) beside all
# takeovers (players leaving at the end hand the match on), and where the logs are. Needs
# what the lab needs (root, iptables, coturn) and a release build (made here).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
cargo build --release --locked --bin vimp >&2 && cargo build --release --locked -p vimp-lab >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out=$(mktemp -d /tmp/vimp-soak.XXXXXX)
chmod 755 "$out"
echo "soak: $seconds s, logs in $out" >&2
scripts/lab.sh --vimp "$target/release/vimp" \
  --home a:cone --home b:cone --home c:cone \
  --line a:10:2:2 --line b:10:2 --line c:10:2 --uplink a:10mbit \
  -- bash -c '
    set -u
    out=$1; seconds=$2
    vimp=$LAB_VIMP
    ip netns exec a "$vimp" host --headless --signal "$LAB_SIGNAL" --code K7M-P2Q --bots 2 \
      --seconds $((seconds + 40)) --json > "$out/host.json" 2> "$out/host.err" &
    host=$!
    for _ in $(seq 600); do grep -q "lobby code" "$out/host.json" && break; sleep 0.05; done
    join() { # HOME NAME SECONDS SUFFIX (run in the background: the job is the vimp process)
      exec ip netns exec "$1" "$vimp" join k7mp2q --signal "$LAB_SIGNAL" --headless --name "$2" \
        --seconds "$3" --json --predict --say-every 4 --token-file "$out/$2.token" \
        > "$out/$2$4.json" 2> "$out/$2$4.err"
    }
    pids=()
    for p in a:ann b:bob b:cy b:dan c:eve c:fay; do
      join "${p%%:*}" "${p#*:}" "$seconds" "" & pids+=($!)
      sleep 0.5
    done
    join c gus "$seconds" ".first" & gus=$!
    sleep $((seconds / 3))
    kill -9 "$gus" 2>/dev/null || true
    wait "$gus" 2>/dev/null || true
    sleep 2
    date +%s.%N > "$out/gus.restarted_at"
    join c gus $((seconds - seconds / 3 - 2)) "" & pids+=($!)
    wait "${pids[@]}" || true
    wait "$host" || true
  ' _ "$out" "$seconds"
python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
def load(path):
    try:
        text = open(path).read()
        return json.loads(text[text.index("{"):]) if "{" in text else None
    except Exception:
        return None
names = ["ann", "bob", "cy", "dan", "eve", "fay", "gus"]
reports = {n: load(os.path.join(out, n + ".json")) for n in names}
logs = {os.path.basename(p): open(p, errors="replace").read() for p in glob.glob(os.path.join(out, "*.err"))}
panics = sum(l.count("panicked") for l in logs.values())
# A takeover is false when the host it replaced was alive: that host steps down ("while this
# host was silent" from the first host, "stepped down" from a later one). A player leaving at
# the end of its run hands the match on: that takeover is no loss.
false_takeovers = sum(l.count("while this host was silent") + l.count("stepped down:") for l in logs.values())
takeovers = sum(l.count("took the match over at tick") for l in logs.values())
drops = 0
for n, r in reports.items():
    if r is None or not r.get("joined"):
        drops += 1
        continue
    if r.get("close_code") not in (None, 1000):
        drops += 1
    drops += len(r.get("reconnects") or [])
# Every line said by anyone reaches every other player that was there throughout (gus was
# away for a while: the lines said meanwhile are not his to hear).
said = {n: (r or {}).get("said") or [] for n, r in reports.items()}
first_gus = load(os.path.join(out, "gus.first.json"))
def heard(r):
    return {c[0] if isinstance(c, list) and c else str(c) for c in (r or {}).get("chat") or []}
# A line every 4 s from each welcome: the first 5 (said while friends may still be joining)
# and the last 2 (said while friends may already have left) are not counted.
delivered, expected, missed = 0, 0, []
for speaker, lines in said.items():
    for line in lines[5:-2]:
        for listener, r in reports.items():
            if listener in (speaker, "gus"):
                continue
            expected += 1
            if line in heard(r):
                delivered += 1
            else:
                missed.append(f"{line} -> {listener}")
corr = []
per_client = {}
for n, r in reports.items():
    if r and r.get("corrections") is not None:
        per_client[n] = {"corrections": r["corrections"], "p99": r.get("correction_p99"), "snaps": r.get("correction_snaps")}
        corr.append(r.get("correction_p99") or 0.0)
gus_err = logs.get("gus.err", "")
first_err = logs.get("gus.first.err", "")
before = re.search(r"joined as player (\d+)", first_err)
after = re.search(r"joined as player (\d+)", gus_err)
gus = reports["gus"] or {}
print(json.dumps({
    "players": len(names),
    "drops": drops,
    "panics": panics,
    "chat_said": sum(len(l) for l in said.values()),
    "chat_deliveries_expected": expected,
    "chat_delivered": delivered,
    "chat_missed": missed[:20],
    "corrections_p99_worst_client": max(corr) if corr else None,
    "corrections": per_client,
    "restart_first_snapshot_ms": gus.get("join_ms"),
    "restart_resumed": gus.get("resumed"),
    "restart_same_slot": bool(before and after and before.group(1) == after.group(1)),
    "false_takeovers": false_takeovers,
    "takeovers": takeovers,
    "takeovers_held": {n: (r or {}).get("takeovers_held") for n, r in reports.items() if (r or {}).get("takeovers_held")},
    "snapshots_per_s": {n: round((r or {}).get("snapshots_per_s") or 0, 1) for n, r in reports.items()},
    "host": {k: (load(os.path.join(out, "host.json")) or {}).get(k) for k in ("bytes_out_per_s", "kicked", "pack_errors", "cpu_percent")},
    "logs": out,
}, indent=1))
PY

#!/usr/bin/env bash
# How vimp plays on the lines people have: the home-network lab (scripts/lab.sh) with the same
# line on every home, for each line profile, release build. Not run in CI (CI's lab tests run a
# short join and line cut at the average profile). Prints one table.
#
#   scripts/lab-profiles.sh [--tries N] [--minutes M] [--cuts K] [--profile NAME]... [VIMP]
#
# The profiles, each line's DELAY_MS:JITTER_MS:LOSS_PERCENT each way (a path between two homes
# crosses two lines):
#   clean    10:2:0    about 40 ms between homes, no loss
#   average  25:8:1    about 100 ms, ~2 % lost each way
#   poor     50:15:2   about 200 ms, ~4 % lost each way
#
# For each profile, three homes behind port-preserving NATs (a, b, c) and:
#   joins      a headless host in a and N joins from b (default 20), one after the other:
#              how many got in within 5 s, join_ms p50 and p99;
#   a match    two players (b, c) with the host for M minutes (default 1): snapshots a second,
#              the gaps between snapshots (p99 and max, the worse player's), and false
#              takeovers (a player that took the match over, or a host that stepped down,
#              while the host was alive);
#   line cuts  K times (default 5): the host and two players, then the host's home line is
#              cut (its router drops everything): how many runs went on with both players
#              (following the new host, or back in by dialing again), and the freeze those
#              that followed saw (the lost host last heard → the first snapshot from the new
#              host) p50 and p99.
#
# Every report and log of a profile is kept in $LAB_PROFILES_KEEP/PROFILE (default
# /tmp/lab-profiles/PROFILE).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A PROFILES=([clean]=10:2:0 [average]=25:8:1 [poor]=50:15:2)
ORDER=(clean average poor)

tries=20 minutes=1 cuts=5 chosen=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tries) tries="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --cuts) cuts="$2"; shift 2 ;;
    --profile) chosen+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "lab-profiles.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
vimp="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp}"
[ -x "$vimp" ] || { echo "build it first: cargo build --release -p vimp -p vimp-lab" >&2; exit 2; }
[ ${#chosen[@]} -gt 0 ] || chosen=("${ORDER[@]}")
for p in "${chosen[@]}"; do
  [ -n "${PROFILES[$p]:-}" ] || { echo "lab-profiles.sh: no profile $p (clean, average, poor)" >&2; exit 2; }
done

# Waits until FILE has a line matching PATTERN, at most SECONDS.
wait_for() {
  local file="$1" pattern="$2" seconds="$3"
  for _ in $(seq $((seconds * 20))); do grep -q "$pattern" "$file" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# A headless host in home a on the small map with lobby CODE, for SECONDS; its output in
# FILE, its pid in $host.
host_in_a() {
  ip netns exec a "$LAB_VIMP" host --headless --signal "$LAB_SIGNAL" --code "$1" \
    --map maps/test-small.json --bots 2 --max-players 64 --seconds "$2" > "$3" 2>&1 &
  host=$!
  wait_for "$3" "lobby code" 30
}

# Players in homes b and c join lobby CODE for SECONDS, reports in PREFIX-{b,c}.json and
# .err; their pids in $players.
players_join() {
  players=()
  for who in b c; do
    ip netns exec "$who" "$LAB_VIMP" join "$LAB_SIGNAL/$1" --headless --name "$who" --seconds "$2" \
      --json > "$3-$who.json" 2> "$3-$who.err" &
    players+=($!)
  done
}

if [ -n "${LAB_SIGNAL:-}" ]; then
  # Inside a lab.
  out="$LAB_DIR/profile"
  mkdir -p "$out"
  # Joins.
  host_in_a J2NSSS 3600 "$out/join-host.out"
  for i in $(seq "$tries"); do
    ip netns exec b "$LAB_VIMP" join "$LAB_SIGNAL/J2NSSS" --headless --name "p$i" --seconds 7 \
      --join-timeout 6 --json > "$out/join$i.json" 2>/dev/null || true
  done
  kill "$host" 2>/dev/null || true
  wait "$host" 2>/dev/null || true
  # A match of two players for M minutes.
  seconds=$((minutes * 60))
  host_in_a MATCHH $((seconds + 60)) "$out/match-host.out"
  players_join MATCHH "$seconds" "$out/match"
  wait "${players[@]}" 2>/dev/null || true
  kill "$host" 2>/dev/null || true
  wait "$host" 2>/dev/null || true
  # Line cuts.
  for k in $(seq "$cuts"); do
    letters=23456789ABCDEFGHJKMNPQRSTUVWXYZ
    code="CUT${letters:$((k % 31)):1}${letters:$((k / 31 % 31)):1}2"
    host_in_a "$code" 120 "$out/cut$k-host.out"
    players_join "$code" 30 "$out/cut$k"
    # Both in and shadowing (or 20 s), then the host's line goes dead.
    for _ in $(seq 400); do
      [ "$(cat "$out"/cut"$k"-[bc].err 2>/dev/null | grep -c 'shadowing the host')" -ge 1 ] &&
        [ "$(cat "$out"/cut"$k"-[bc].err 2>/dev/null | grep -c 'linked to 2 peer')" -ge 2 ] && break
      sleep 0.05
    done
    ip netns exec a-router iptables -I FORWARD 1 -j DROP
    ip netns exec a-router iptables -I INPUT 1 -j DROP
    wait "${players[@]}" 2>/dev/null || true
    ip netns exec a-router iptables -D FORWARD 1
    ip netns exec a-router iptables -D INPUT 1
    kill "$host" 2>/dev/null || true
    wait "$host" 2>/dev/null || true
  done
  # Every report and log, kept after the lab is gone.
  keep="${LAB_PROFILES_KEEP:-/tmp/lab-profiles}/$PROFILE"
  rm -rf "$keep" && mkdir -p "$keep" && cp -r "$out"/. "$keep"/ && cp "$LAB_DIR"/*.log "$keep"/ 2>/dev/null || true
  /usr/bin/env python3 - "$out" "$tries" "$cuts" "$PROFILE" "$LINE" "$minutes" <<'PY'
import glob, json, os, sys
d, tries, cuts, profile, line, minutes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def load(f):
    try:
        return json.load(open(f))
    except (OSError, ValueError):
        return None
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")
joins = [r for r in (load(f) for f in glob.glob(d + "/join*.json")) if r]
ms = [r["join_ms"] for r in joins if r.get("joined") and r.get("join_ms") is not None]
within = sum(1 for m in ms if m <= 5000)
match = [r for r in (load(d + f"/match-{w}.json") for w in "bc") if r]
per_s = min((r.get("snapshots_per_s") or 0 for r in match), default=float("nan"))
gap99 = max((r.get("snapshot_gap_ms_p99") or float("nan") for r in match), default=float("nan"))
gapmax = max((r.get("snapshot_gap_ms_max") or float("nan") for r in match), default=float("nan"))
errs = "".join(open(f).read() for f in glob.glob(d + "/match-*.err"))
host_out = open(d + "/match-host.out").read() if os.path.exists(d + "/match-host.out") else ""
false = errs.count("took the match over") + host_out.count("stepping down")
drops = sum(1 for r in match if r.get("close_code") not in (None,)) + sum(len(r.get("reconnects") or []) for r in match)
went_on, redialed, freezes = 0, 0, []
for k in range(1, cuts + 1):
    rs = [load(d + f"/cut{k}-{w}.json") for w in "bc"]
    # A player went on when it ended its run in the match at a later host's epoch: it
    # followed the new host, or dialed the match again and was back in it (its list of
    # successors was older than the host's death).
    ok = [r for r in rs if r and r.get("close_code") is None and not r.get("reconnect_gave_up")
          and (r.get("host_epoch") or 0) >= 2]
    redialed += sum(1 for r in ok if any(x.get("back_after_ms") is not None for x in r.get("reconnects") or []))
    went_on += len(ok) == 2
    freezes += [r["freeze_ms"] for r in ok if r.get("freeze_ms") is not None]
print(f"{profile:<8} {line:<8} | joins {within:>2}/{tries} in 5 s, p50 {pct(ms, 50):6.0f} ms, p99 {pct(ms, 99):6.0f} ms"
      f" | {minutes} min: {per_s:5.1f} snapshots/s, gap p99 {gap99:5.0f} max {gapmax:5.0f} ms,"
      f" {false} false takeovers, {drops} drops"
      f" | line cut: {went_on}/{cuts} went on ({redialed} players by dialing again),"
      f" freeze p50 {pct(freezes, 50):5.0f} p99 {pct(freezes, 99):5.0f} ms")
PY
  exit 0
fi

for p in "${chosen[@]}"; do
  line="${PROFILES[$p]}"
  scripts/lab.sh --vimp "$vimp" --home a:cone --home b:cone --home c:cone \
    --line "a:$line" --line "b:$line" --line "c:$line" -- \
    env PROFILE="$p" LINE="$line" "$0" --tries "$tries" --minutes "$minutes" --cuts "$cuts" "$vimp"
done

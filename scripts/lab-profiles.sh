#!/usr/bin/env bash
# How vimp plays on the lines people have: the home-network lab (scripts/lab.sh) with the same
# line on every home, for each line profile, release build. Not run in CI (CI's lab tests run a
# short join and line cut at the average profile). Prints one table.
#
#   scripts/lab-profiles.sh [--tries N] [--minutes M] [--cuts K] [--kills K] [--friends F]
#                           [--profile NAME]... [--setup NAME]... [VIMP]
#
# The profiles, each line's DELAY_MS:JITTER_MS:LOSS_PERCENT each way (a path between two homes
# crosses two lines):
#   clean    10:2:0    about 40 ms between homes, no loss
#   average  25:8:1    about 100 ms, ~2 % lost each way
#   poor     50:15:2   about 200 ms, ~4 % lost each way
#
# The setups (`--setup`, both by default):
#   separate   a `vimp signal` (with coturn) on the public segment, the host and its players
#              in homes behind port-preserving NATs (a, b, c, d): what a group that runs a
#              rendezvous of its own gets;
#   default    no rendezvous on the internet: the host serves its room itself (no --signal) in
#              home a, whose router maps ports (miniupnpd, `--home a:upnp`), and its players join
#              by the invite it prints: what a player who presses Host gets.
#
# For each profile and setup, the host in home a and:
#   joins      N joins from b (default 20), one after the other: how many got in within 5 s,
#              join_ms p50 and p99;
#   a match    F players (b, c, d: --friends, default 2) with the host for M minutes (default
#              1): snapshots a second, the gaps between snapshots (p99 and max, the worse
#              player's), and false takeovers (a player that took the match over, or a host that
#              stepped down, while the host was alive);
#   line cuts  K times (default 5): the host and F players, then the host's home line is cut (its
#              router drops everything): how many runs went on with every player (following the
#              new host, or back in by dialing again), and the freeze those that followed saw (the
#              lost host last heard → the first snapshot from the new host) p50 and p99;
#   kills      K times (--kills, default as many as the cuts): the same, the host's process
#              SIGKILLed instead.
#
# Every report and log of a profile is kept in $LAB_PROFILES_KEEP/PROFILE (default
# /tmp/lab-profiles/PROFILE).
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A PROFILES=([clean]=10:2:0 [average]=25:8:1 [poor]=50:15:2)
ORDER=(clean average poor)

tries=20 minutes=1 cuts=5 kills="" friends=2 chosen=() setups=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tries) tries="$2"; shift 2 ;;
    --minutes) minutes="$2"; shift 2 ;;
    --cuts) cuts="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --friends) friends="$2"; shift 2 ;;
    --profile) chosen+=("$2"); shift 2 ;;
    --setup) setups+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "lab-profiles.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
vimp="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp}"
[ -x "$vimp" ] || { echo "build it first: cargo build --release -p vimp -p vimp-lab" >&2; exit 2; }
[ ${#chosen[@]} -gt 0 ] || chosen=("${ORDER[@]}")
[ ${#setups[@]} -gt 0 ] || setups=(separate default)
[ -n "$kills" ] || kills="$cuts"
for p in "${chosen[@]}"; do
  [ -n "${PROFILES[$p]:-}" ] || { echo "lab-profiles.sh: no profile $p (clean, average, poor)" >&2; exit 2; }
done
for s in "${setups[@]}"; do
  case "$s" in separate|default) ;; *) echo "lab-profiles.sh: no setup $s (separate, default)" >&2; exit 2 ;; esac
done
case "$friends" in 1|2|3) ;; *) echo "lab-profiles.sh: --friends 1 to 3" >&2; exit 2 ;; esac

# Waits until FILE has a line matching PATTERN, at most SECONDS.
wait_for() {
  local file="$1" pattern="$2" seconds="$3"
  for _ in $(seq $((seconds * 20))); do grep -q "$pattern" "$file" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# A headless host in home a on the small map with lobby CODE, for SECONDS; its output in
# FILE, its pid in $host, the room URL players join in $room: the rendezvous's room in the
# separate setup, the invite the host prints for other homes in the default one.
host_in_a() {
  if [ "$SETUP" = default ]; then
    ip netns exec a "$LAB_VIMP" host --headless --code "$1" \
      --map maps/test-small.json --bots 2 --max-players 64 --seconds "$2" > "$3" 2>&1 &
    host=$!
    wait_for "$3" "friends join with: vimp join ws://$LAB_PUBLIC_a:" 30
    room="$(grep -o "vimp join ws://$LAB_PUBLIC_a:[^ ]*" "$3" | head -1 | cut -d' ' -f3)"
  else
    ip netns exec a "$LAB_VIMP" host --headless --signal "$LAB_SIGNAL" --code "$1" \
      --map maps/test-small.json --bots 2 --max-players 64 --seconds "$2" > "$3" 2>&1 &
    host=$!
    wait_for "$3" "lobby code" 30
    room="$LAB_SIGNAL/$1"
  fi
}

# The homes of the players: b, c, d, as many as --friends.
FRIENDS=(b c d)
FRIENDS=("${FRIENDS[@]:0:${FRIENDS_N:-2}}")

# The players join $room for SECONDS, reports in PREFIX-HOME.json and .err; their pids in
# $players.
players_join() {
  players=()
  for who in "${FRIENDS[@]}"; do
    ip netns exec "$who" "$LAB_VIMP" join "$room" --headless --name "$who" --seconds "$1" \
      --json > "$2-$who.json" 2> "$2-$who.err" &
    players+=($!)
  done
}

# The host's home line goes dead (ARG -I) or comes back (-D): its router drops everything.
cut_line() {
  local iptables=iptables
  [ "$SETUP" = default ] && iptables=iptables-legacy
  if [ "$1" = -I ]; then
    ip netns exec a-router $iptables -I FORWARD 1 -j DROP
    ip netns exec a-router $iptables -I INPUT 1 -j DROP
  else
    ip netns exec a-router $iptables -D FORWARD 1
    ip netns exec a-router $iptables -D INPUT 1
  fi
}

# One run that loses its host: the host and the players, every player linked to the others and
# one shadowing (or 20 s), then HOW (cut or kill) happens to the host. Reports in PREFIX-*.
lose_host() {
  local how="$1" code="$2" prefix="$3"
  host_in_a "$code" 120 "$prefix-host.out"
  players_join 20 "$prefix"
  for _ in $(seq 400); do
    [ "$(cat "$prefix"-*.err 2>/dev/null | grep -c 'shadowing the host')" -ge 1 ] &&
      [ "$(cat "$prefix"-*.err 2>/dev/null | grep -c "linked to $FRIENDS_N peer")" -ge "$FRIENDS_N" ] && break
    sleep 0.05
  done
  if [ "$how" = cut ]; then cut_line -I; else kill -9 "$host"; fi
  wait "${players[@]}" 2>/dev/null || true
  [ "$how" = cut ] && cut_line -D
  kill "$host" 2>/dev/null || true
  wait "$host" 2>/dev/null || true
}

if [ -n "${LAB_PROFILES_INSIDE:-}" ]; then
  # Inside a lab.
  out="$LAB_DIR/profile"
  mkdir -p "$out"
  # Joins.
  host_in_a J2NSSS 3600 "$out/join-host.out"
  for i in $(seq "$tries"); do
    ip netns exec b "$LAB_VIMP" join "$room" --headless --name "p$i" --seconds 7 \
      --join-timeout 6 --json > "$out/join$i.json" 2>/dev/null || true
  done
  kill "$host" 2>/dev/null || true
  wait "$host" 2>/dev/null || true
  # A match of the players for M minutes.
  seconds=$((minutes * 60))
  host_in_a MATCHH $((seconds + 60)) "$out/match-host.out"
  players_join "$seconds" "$out/match"
  wait "${players[@]}" 2>/dev/null || true
  kill "$host" 2>/dev/null || true
  wait "$host" 2>/dev/null || true
  letters=23456789ABCDEFGHJKMNPQRSTUVWXYZ
  # Line cuts, then kills.
  for k in $(seq "$cuts"); do
    lose_host cut "CUT${letters:$((k % 31)):1}${letters:$((k / 31 % 31)):1}2" "$out/cut$k"
  done
  for k in $(seq "$kills"); do
    lose_host kill "KXQ${letters:$((k % 31)):1}${letters:$((k / 31 % 31)):1}2" "$out/kill$k"
  done
  # Every report and log, kept after the lab is gone.
  keep="${LAB_PROFILES_KEEP:-/tmp/lab-profiles}/$PROFILE-$SETUP"
  rm -rf "$keep" && mkdir -p "$keep" && cp -r "$out"/. "$keep"/ && cp "$LAB_DIR"/*.log "$keep"/ 2>/dev/null || true
  /usr/bin/env python3 - "$out" "$tries" "$cuts" "$PROFILE" "$LINE" "$minutes" "$kills" "$SETUP" "${FRIENDS[*]}" <<'PY'
import glob, json, os, sys
d, tries, cuts, profile, line, minutes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
kills, setup, friends = int(sys.argv[7]), sys.argv[8], sys.argv[9].split()
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
match = [r for r in (load(d + f"/match-{w}.json") for w in friends) if r]
per_s = min((r.get("snapshots_per_s") or 0 for r in match), default=float("nan"))
gap99 = max((r.get("snapshot_gap_ms_p99") or float("nan") for r in match), default=float("nan"))
gapmax = max((r.get("snapshot_gap_ms_max") or float("nan") for r in match), default=float("nan"))
errs = "".join(open(f).read() for f in glob.glob(d + "/match-*.err"))
host_out = open(d + "/match-host.out").read() if os.path.exists(d + "/match-host.out") else ""
false = errs.count("took the match over") + host_out.count("stepping down")
drops = sum(1 for r in match if r.get("close_code") not in (None,)) + sum(len(r.get("reconnects") or []) for r in match)
def lost(kind, runs):
    went_on, redialed, freezes = 0, 0, []
    for k in range(1, runs + 1):
        rs = [load(d + f"/{kind}{k}-{w}.json") for w in friends]
        # A player went on when it ended its run in the match at a later host's epoch: it
        # followed the new host, or dialed the match again and was back in it (its list of
        # successors was older than the host's death).
        ok = [r for r in rs if r and r.get("close_code") is None and not r.get("reconnect_gave_up")
              and (r.get("host_epoch") or 0) >= 2]
        redialed += sum(1 for r in ok if any(x.get("back_after_ms") is not None for x in r.get("reconnects") or []))
        went_on += len(ok) == len(friends)
        freezes += [r["freeze_ms"] for r in ok if r.get("freeze_ms") is not None]
    return (f"{went_on}/{runs} went on ({redialed} players by dialing again),"
            f" freeze p50 {pct(freezes, 50):5.0f} p99 {pct(freezes, 99):5.0f} ms")
print(f"{profile:<8} {line:<8} {setup:<8} {len(friends) + 1} players | joins {within:>2}/{tries} in 5 s,"
      f" p50 {pct(ms, 50):6.0f} ms, p99 {pct(ms, 99):6.0f} ms"
      f" | {minutes} min: {per_s:5.1f} snapshots/s, gap p99 {gap99:5.0f} max {gapmax:5.0f} ms,"
      f" {false} false takeovers, {drops} drops"
      f" | line cut: {lost('cut', cuts)} | kill: {lost('kill', kills)}")
PY
  exit 0
fi

for p in "${chosen[@]}"; do
  line="${PROFILES[$p]}"
  lines=()
  for h in a b c d; do lines+=(--line "$h:$line"); done
  for setup in "${setups[@]}"; do
    if [ "$setup" = default ]; then
      homes=(--no-signal --home a:upnp --home b:cone --home c:cone --home d:cone)
    else
      homes=(--home a:cone --home b:cone --home c:cone --home d:cone)
    fi
    scripts/lab.sh --vimp "$vimp" "${homes[@]}" "${lines[@]}" -- \
      env PROFILE="$p" LINE="$line" SETUP="$setup" FRIENDS_N="$friends" LAB_PROFILES_INSIDE=1 \
      "$0" --tries "$tries" --minutes "$minutes" --cuts "$cuts" --kills "$kills" --friends "$friends" "$vimp"
  done
done

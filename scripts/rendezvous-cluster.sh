#!/usr/bin/env bash
# A rendezvous for many players: HAProxy in front of three `vimp signal` processes, the rooms
# sharded by lobby code, and one of the three killed mid-run. Release build; runs in a private
# network namespace with loopback only (`unshare -rn`), so no packet leaves the machine.
#
#   scripts/rendezvous-cluster.sh [--rooms N] [--matches M] [--hold S] [VIMP]
#
# What it does:
#   1. starts three `vimp signal` backends (127.0.0.1:3601-3603) and HAProxy at 127.0.0.1:3536,
#      with the configuration the README gives ("Running a rendezvous for many players"):
#      `balance hash path,field(-1,/)` and `hash-type consistent`, so `/CODE` and `/rooms/CODE`
#      land on the same backend, and a backend that goes down moves only its own rooms;
#   2. starts M real matches through the balancer (default 6: a headless host with a bot and a
#      headless player each, over WebRTC), and a load of N rooms of two peers (default 2000,
#      `vimp signal-bench --url`) that relay their signals and then stay;
#   3. kills (SIGKILL) the backend that holds the most matches, and prints:
#      - the matches in its rooms play on (their players' snapshots never stopped: the largest
#        gap, no host change, no redial);
#      - their host and player joined their rooms again through the balancer under the same ids
#        (how long after the kill), and a friend who joins one of those rooms afterwards gets in;
#      - the other rooms were untouched: the load's rooms on the other backends were never
#        closed (`rooms_closed` is the count the killed backend held), and the matches there
#        are still on their backend with the same members.
#   Exit 0 when all of that holds, 1 otherwise.
#
# Needs haproxy (Debian's package: `apt-get install haproxy`). Logs and reports are kept in
# $CLUSTER_KEEP (default /tmp/rendezvous-cluster).
set -euo pipefail
cd "$(dirname "$0")/.."

rooms=2000 matches=6 hold=40
while [ $# -gt 0 ]; do
  case "$1" in
    --rooms) rooms="$2"; shift 2 ;;
    --matches) matches="$2"; shift 2 ;;
    --hold) hold="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "rendezvous-cluster.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
vimp="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp}"
[ -x "$vimp" ] || { echo "build it first: cargo build --release -p vimp" >&2; exit 2; }
vimp="$(cd "$(dirname "$vimp")" && pwd)/$(basename "$vimp")"
command -v haproxy > /dev/null || { echo "needs haproxy: apt-get install haproxy" >&2; exit 2; }
[ "$matches" -ge 1 ] && [ "$matches" -le 8 ] || { echo "--matches is 1 to 8" >&2; exit 2; }

if [ -z "${CLUSTER_INSIDE:-}" ]; then
  exec unshare -rn env CLUSTER_INSIDE=1 bash -c \
    'ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec "$0" "$@"' \
    "$0" --rooms "$rooms" --matches "$matches" --hold "$hold" "$vimp"
fi

keep="${CLUSTER_KEEP:-/tmp/rendezvous-cluster}"
rm -rf "$keep" && mkdir -p "$keep"
# The backends share one rendezvous database, in the scratch directory.
export VIMP_DATA_DIR="$keep/data"
ulimit -n "$(ulimit -Hn)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; wait 2> /dev/null || true' EXIT

BALANCER=127.0.0.1:3536
PORTS=(3601 3602 3603)
CODES=(SHARD2 SHARD3 SHARD4 SHARD5 SHARD6 SHARD7 SHARD8 SHARD9)

# Waits until FILE has a line matching PATTERN, at most SECONDS.
wait_for() {
  local file="$1" pattern="$2" seconds="$3"
  for _ in $(seq $((seconds * 20))); do grep -q "$pattern" "$file" 2> /dev/null && return 0; sleep 0.05; done
  echo "rendezvous-cluster.sh: nothing like \"$pattern\" in $file within $seconds s" >&2
  return 1
}

# FIELD of the JSON object in FILE, or of the JSON on stdin with FILE "-" (a list: its length).
field() {
  local file="$1" name="$2"
  if [ "$file" = - ]; then cat; else cat "$file"; fi |
    python3 -c 'import json,sys; v=json.loads(sys.stdin.read() or "{}").get(sys.argv[1]); print("" if v is None else (len(v) if isinstance(v, list) else v))' "$name"
}

# The sorted member ids of room CODE as ADDR (a backend, or the balancer) lists them.
members() {
  curl -sf --max-time 2 "http://$1/rooms/$2" |
    python3 -c 'import json,sys; print(" ".join(sorted(m["id"] for m in json.load(sys.stdin).get("members", []))))' || true
}

# 1. The backends and the balancer.
for i in 0 1 2; do
  "$vimp" signal --bind "127.0.0.1:${PORTS[$i]}" --no-stun --max-per-address 1000000 --trusted-proxy 127.0.0.1 \
    --upgrades-per-second 1000000000 --messages-per-address 1000000000 --requests-per-second 1000000000 \
    > "$keep/signal-$i.log" 2>&1 &
  pids+=($!)
  backend_pid[$i]=$!
done
for i in 0 1 2; do wait_for "$keep/signal-$i.log" "listening" 20; done
sed -e "s/@BIND@/$BALANCER/" -e 's/@PER_ADDRESS@/1000000/' -e 's/@PER_SECOND@/1000000000/' \
  -e "s/@MAXCONN@/$(( $(ulimit -Hn) / 2 - 100 ))/" \
  -e "s/@S1@/127.0.0.1:${PORTS[0]}/" -e "s/@S2@/127.0.0.1:${PORTS[1]}/" -e "s/@S3@/127.0.0.1:${PORTS[2]}/" \
  deploy/haproxy.cfg > "$keep/haproxy.cfg"
haproxy -db -f "$keep/haproxy.cfg" > "$keep/haproxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do curl -sf --max-time 1 "http://$BALANCER/ice" > /dev/null && break; sleep 0.05; done
curl -sf --max-time 1 "http://$BALANCER/ice" > /dev/null || { echo "the balancer does not answer" >&2; exit 1; }
echo "3 backends (127.0.0.1:${PORTS[0]}-${PORTS[2]}) behind HAProxy at $BALANCER"

# 2. The matches, then the load.
signal="ws://$BALANCER"
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  "$vimp" host --headless --signal "$signal" --code "$code" --map maps/test-small.json --bots 1 \
    --max-players 8 --seconds $((hold + 90)) > "$keep/host-$code.log" 2>&1 &
  pids+=($!)
done
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  wait_for "$keep/host-$code.log" "^lobby code:" 30
  "$vimp" join "$code" --headless --signal "$signal" --name "player$m" --seconds $((hold + 45)) \
    --json > "$keep/player-$code.json" 2> "$keep/player-$code.err" &
  pids+=($!)
  player_pid[$m]=$!
done
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  for _ in $(seq 600); do grep -q "joined as" "$keep/player-$code.err" 2> /dev/null && break; sleep 0.05; done
  grep -q "joined as" "$keep/player-$code.err" || { echo "match $code: its player never got in" >&2; exit 1; }
done
echo "$matches matches playing through the balancer"
"$vimp" signal-bench --url "$signal" --rooms "$rooms" --hold-s "$hold" --json \
  > "$keep/load.json" 2> "$keep/load.err" &
bench=$!
pids+=($bench)
wait_for "$keep/load.err" "holding them" 120
echo "load: $rooms rooms of two peers in, holding for $hold s"

# Where everything is.
declare -A owner before
for i in 0 1 2; do
  load[$i]=$(curl -sf --max-time 2 "http://127.0.0.1:${PORTS[$i]}/rooms" | field - rooms)
  mine[$i]=0
done
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  for i in 0 1 2; do
    ids=$(members "127.0.0.1:${PORTS[$i]}" "$code")
    if [ -n "$ids" ]; then owner[$code]=$i; before[$code]="$ids"; mine[$i]=$((mine[$i] + 1)); fi
  done
done
victim=0
for i in 1 2; do [ "${mine[$i]}" -gt "${mine[$victim]}" ] && victim=$i; done
for i in 0 1 2; do
  echo "backend $((i + 1)) (:${PORTS[$i]}): ${load[$i]} rooms, ${mine[$i]} of them matches"
done
load_on_victim=$((load[$victim] - mine[$victim]))

# 3. Kill the backend with the most matches.
echo "killing backend $((victim + 1)) (:${PORTS[$victim]})"
kill -9 "${backend_pid[$victim]}"
killed_at=$(date +%s%N)
wait "${backend_pid[$victim]}" 2> /dev/null || true
ok=1

# Its matches: back in their rooms through the balancer, under the same ids; then a friend joins.
declare -A back
for _ in $(seq 400); do
  waiting=0
  for m in $(seq 0 $((matches - 1))); do
    code=${CODES[$m]}
    [ "${owner[$code]:-}" = "$victim" ] && [ -z "${back[$code]:-}" ] || continue
    if [ "$(members "$BALANCER" "$code")" = "${before[$code]}" ]; then
      back[$code]=$(( ($(date +%s%N) - killed_at) / 1000000 ))
    else
      waiting=1
    fi
  done
  [ "$waiting" = 0 ] && break
  sleep 0.05
done
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  [ "${owner[$code]:-}" = "$victim" ] || continue
  if [ -z "${back[$code]:-}" ]; then
    echo "match $code: its peers did not join the room again within 20 s (listed: $(members "$BALANCER" "$code"))"
    ok=0
    continue
  fi
  "$vimp" join "$code" --headless --signal "$signal" --name "friend$m" --seconds 3 --join-timeout 10 \
    --json > "$keep/friend-$code.json" 2> "$keep/friend-$code.err" || true
  if [ "$(field "$keep/friend-$code.json" joined)" = True ]; then
    printf 'match %s: host and player back in the room %s ms after the kill, same ids; a friend joined after (in %.0f ms)\n' \
      "$code" "${back[$code]}" "$(field "$keep/friend-$code.json" join_ms)"
  else
    echo "match $code: host and player back in the room ${back[$code]} ms after the kill, but a friend could not join: $(field "$keep/friend-$code.json" reason)"
    ok=0
  fi
done

# The other backends' matches: still there, the same members.
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  i=${owner[$code]:-}
  [ -n "$i" ] && [ "$i" != "$victim" ] || continue
  if [ "$(members "127.0.0.1:${PORTS[$i]}" "$code")" = "${before[$code]}" ]; then
    echo "match $code: untouched on backend $((i + 1))"
  else
    echo "match $code: its room on backend $((i + 1)) changed"
    ok=0
  fi
done

# Every player played on: no host change, no redial, no gap of a second.
for m in $(seq 0 $((matches - 1))); do wait "${player_pid[$m]}" || true; done
for m in $(seq 0 $((matches - 1))); do
  code=${CODES[$m]}
  report="$keep/player-$code.json"
  gap=$(field "$report" snapshot_gap_ms_max)
  migrations=$(field "$report" migrations)
  redials=$(field "$report" reconnects)
  where="backend $(( ${owner[$code]:-0} + 1 ))"
  [ "${owner[$code]:-}" = "$victim" ] && where="$where, killed"
  printf 'match %s (%s): %.1f snapshots/s, largest gap %.0f ms, %s host changes, %s redials\n' \
    "$code" "$where" "$(field "$report" snapshots_per_s)" "${gap:-0}" "$migrations" "$redials"
  if [ -z "$gap" ] || [ "${gap%.*}" -ge 1000 ] || [ "$migrations" != 0 ] || [ "$redials" != 0 ]; then ok=0; fi
done

# The load: only the killed backend's rooms were closed.
wait "$bench" || true
closed=$(field "$keep/load.json" rooms_closed)
echo "load: $closed of $rooms rooms closed; the killed backend held $load_on_victim of them"
[ "$closed" = "$load_on_victim" ] || ok=0

if [ "$ok" = 1 ]; then echo "all held"; exit 0; fi
echo "something did not hold: see $keep"
exit 1

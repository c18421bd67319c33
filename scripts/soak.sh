#!/usr/bin/env bash
# The soak: a real match in the home-network lab (`scripts/lab.sh`) for SECONDS (300 by
# default), and its figures. Not run in CI (it takes minutes).
#
#   sudo scripts/soak.sh [--seconds S] [--players N] [--line DELAY:JITTER:LOSS] [--silent]
#                        [--kill-host-at S] [SECONDS]
#
# Three homes behind cone NATs: the host's home `a` on a line that loses 2 % of packets each
# way (10 ± 2 ms) with a 10 Mbit/s uplink cap, holding a headless host (2 bots, the default
# map) and one player; homes `b` and `c` (10 ± 2 ms lines) with three players each. Every
# player is a headless client that predicts its own tank and says a numbered chat line every
# 4 s. A third of the way in (10 s after the host is killed, should that come within 10 s of
# it), the last player (gus, in `c`) is killed (SIGKILL) and started again 2 s later with its
# token file: it must be back in its slot.
#
#   --players N         the first N of ann (a), bob (b), eve (c), cy (b), fay (c), dan (b),
#                       gus (c); the last of them is the one killed and started again
#                       (default 7)
#   --line D:J:L        the same line on every home: DELAY_MS:JITTER_MS:LOSS_PERCENT each way
#                       (e.g. 50:15:2, the "poor" profile of scripts/lab-profiles.sh)
#   --silent            bob never answers the room's check before a takeover (`vimp join
#                       --no-host-checks`), as a client of another make may
#   --kill-host-at S    the host is killed (SIGKILL) S seconds in: the match must go on
#
# Prints JSON: drops (sessions that ended other than by leaving at the end, plus
# reconnections), panics (in any log), chat lines said and delivered (every line to every
# other player who was there throughout), corrections p50/p99 and per client, the restarted
# player's way back (its start → its first snapshot) and whether its slot came back, false takeovers
# (a player took the match over though its host was alive, which then stepped down) beside all
# takeovers (players leaving at the end hand the match on), with the host killed: whether
# every player went on and the freeze each saw; and where the logs are. Needs
# what the lab needs (root, iptables, coturn) and a release build (made here).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=300 players=7 line="" silent=0 kill_at=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --players) players="$2"; shift 2 ;;
    --line) line="$2"; shift 2 ;;
    --silent) silent=1; shift ;;
    --kill-host-at) kill_at="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "soak.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) seconds="$1"; shift ;;
  esac
done
[ "$players" -ge 1 ] && [ "$players" -le 7 ] || { echo "soak.sh: --players is 1 to 7" >&2; exit 2; }
if [ -n "$line" ]; then
  lines=(--line "a:$line" --line "b:$line" --line "c:$line")
else
  lines=(--line a:10:2:2 --line b:10:2 --line c:10:2)
fi
cargo build --release --locked --bin vimp >&2 && cargo build --release --locked -p vimp-lab >&2
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
out=$(mktemp -d /tmp/vimp-soak.XXXXXX)
chmod 755 "$out"
roster=(a:ann b:bob c:eve b:cy c:fay b:dan c:gus)
roster=("${roster[@]:0:$players}")
echo "soak: $seconds s, ${roster[*]}, logs in $out" >&2
printf '%s\n' "${roster[@]}" > "$out/roster"
scripts/lab.sh --vimp "$target/release/vimp" \
  --home a:cone --home b:cone --home c:cone \
  "${lines[@]}" --uplink a:10mbit \
  -- bash -c '
    set -u
    out=$1; seconds=$2; silent=$3; kill_at=$4
    vimp=$LAB_VIMP
    mapfile -t roster < "$out/roster"
    ip netns exec a "$vimp" host --headless --signal "$LAB_SIGNAL" --code K7M-P2Q --bots 2 \
      --seconds $((seconds + 40)) --json > "$out/host.json" 2> "$out/host.err" &
    host=$!
    for _ in $(seq 600); do grep -q "lobby code" "$out/host.json" && break; sleep 0.05; done
    join() { # HOME NAME SECONDS SUFFIX (run in the background: the job is the vimp process)
      local quiet=()
      [ "$silent" = 1 ] && [ "$2" = bob ] && quiet=(--no-host-checks)
      exec ip netns exec "$1" "$vimp" join k7mp2q --signal "$LAB_SIGNAL" --headless --name "$2" \
        --seconds "$3" --json --predict --say-every 4 --token-file "$out/$2.token" "${quiet[@]}" \
        > "$out/$2$4.json" 2> "$out/$2$4.err"
    }
    last=${roster[${#roster[@]}-1]}
    pids=()
    for p in "${roster[@]}"; do
      [ "$p" = "$last" ] && [ ${#roster[@]} -gt 1 ] && break
      join "${p%%:*}" "${p#*:}" "$seconds" "" & pids+=($!)
      sleep 0.5
    done
    if [ "$kill_at" != 0 ]; then
      ( sleep "$kill_at"; date +%s.%N > "$out/host.killed_at"; kill -9 "$host" ) & pids+=($!)
    fi
    if [ ${#roster[@]} -gt 1 ]; then
      # A third of the way in; but not within 10 s of the host killed, or the restarted
      # player would not be in the match when the host goes.
      restart_at=$((seconds / 3))
      if [ "$kill_at" != 0 ] && [ $((restart_at - kill_at)) -lt 10 ] && [ $((kill_at - restart_at)) -lt 10 ]; then
        restart_at=$((kill_at + 10))
      fi
      join "${last%%:*}" "${last#*:}" "$seconds" ".first" & restarted=$!
      sleep "$restart_at"
      kill -9 "$restarted" 2>/dev/null || true
      wait "$restarted" 2>/dev/null || true
      sleep 2
      date +%s.%N > "$out/restarted_at"
      join "${last%%:*}" "${last#*:}" $((seconds - restart_at - 2)) "" & pids+=($!)
    fi
    wait "${pids[@]}" || true
    wait "$host" || true
  ' _ "$out" "$seconds" "$silent" "$kill_at"
python3 - "$out" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
def load(path):
    try:
        text = open(path).read()
        return json.loads(text[text.index("{"):]) if "{" in text else None
    except Exception:
        return None
roster = [l.split(":")[1] for l in open(os.path.join(out, "roster")).read().split()]
names = roster
restarted = roster[-1] if len(roster) > 1 else None
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
# Every line said by anyone reaches every other player that was there throughout (the
# restarted player was away for a while: the lines said meanwhile are not its to hear).
said = {n: (r or {}).get("said") or [] for n, r in reports.items()}
def heard(r):
    return {c[0] if isinstance(c, list) and c else str(c) for c in (r or {}).get("chat") or []}
# A line every 4 s from each welcome: the first 5 (said while friends may still be joining)
# and the last 2 (said while friends may already have left) are not counted.
delivered, expected, missed = 0, 0, []
for speaker, lines in said.items():
    for line in lines[5:-2]:
        for listener, r in reports.items():
            if listener in (speaker, restarted):
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
gus_err = logs.get(f"{restarted}.err", "")
first_err = logs.get(f"{restarted}.first.err", "")
before = re.search(r"joined as player (\d+)", first_err)
after = re.search(r"joined as player (\d+)", gus_err)
gus = reports.get(restarted) or {}
killed = os.path.exists(os.path.join(out, "host.killed_at"))
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
    "host_killed": killed,
    # With the host killed: every player still there at its end went on with the match
    # (followed the new host, or hosted it), and the freeze each saw.
    "went_on": {n: bool(r and r.get("joined") and (r.get("migrations") or r.get("promoted_at_tick") is not None)
                        and (r.get("snapshots_after_host_change") or 0) > 0) for n, r in reports.items()} if killed else None,
    "freeze_ms": {n: (r or {}).get("freeze_ms") for n, r in reports.items()} if killed else None,
    "takeovers_held": {n: (r or {}).get("takeovers_held") for n, r in reports.items() if (r or {}).get("takeovers_held")},
    "snapshots_per_s": {n: round((r or {}).get("snapshots_per_s") or 0, 1) for n, r in reports.items()},
    "host": {k: (load(os.path.join(out, "host.json")) or {}).get(k) for k in ("bytes_out_per_s", "kicked", "pack_errors", "cpu_percent")},
    "logs": out,
}, indent=1))
PY

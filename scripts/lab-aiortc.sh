#!/usr/bin/env bash
# vimp's link beside aiortc's (the Python WebRTC stack, the reference) through the same lines
# of the home-network lab (scripts/lab.sh): is a slow join vimp's doing, or the line's and the
# lab conditioner's? Not run in CI. Release build.
#
#   scripts/lab-aiortc.sh [--tries N] [--line DELAY_MS:JITTER_MS:LOSS_PERCENT]
#
# Two homes behind cone NATs, the same line on both (default 25:8:1, the "average" profile of
# scripts/lab-profiles.sh). N times (default 10), one after the other:
#   aiortc   lab/aiortc_link.py: an offering side in home a, an answering side in home b, the
#            descriptions traded through files (no time on the lines); two negotiated data
#            channels as vimp's, then a hello on the reliable one and its answer;
#   vimp     a fresh headless host in home a and one `vimp join` from home b, its link's phases
#            logged (RUST_LOG=matchbox_socket::phases=info).
# Prints one table, p50 and p99 of each: the offer in hand → ICE connected → every channel
# open (ICE, DTLS and SCTP: the stacks alone), → the hello answered; and for vimp its whole
# join (start → first snapshot, signalling and all). Keeps every report in
# $LAB_AIORTC_KEEP (default /tmp/lab-aiortc). Needs what the lab needs, and aiortc
# (`pip install aiortc`).
set -euo pipefail
cd "$(dirname "$0")/.."

tries=10 line=25:8:1
while [ $# -gt 0 ]; do
  case "$1" in
    --tries) tries="$2"; shift 2 ;;
    --line) line="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "lab-aiortc.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
python=$(python3 -c 'import sys; print(sys.executable)')
"$python" -c 'import aiortc' 2>/dev/null || { echo "lab-aiortc.sh: needs aiortc (pip install aiortc)" >&2; exit 2; }
vimp="${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp"
[ -x "$vimp" ] || { echo "build it first: cargo build --release -p vimp -p vimp-lab" >&2; exit 2; }
keep="${LAB_AIORTC_KEEP:-/tmp/lab-aiortc}"
rm -rf "$keep" && mkdir -p "$keep"

scripts/lab.sh --vimp "$vimp" --home a:cone --home b:cone --line "a:$line" --line "b:$line" -- bash -c '
  set -u
  keep=$1 tries=$2 python=$3
  stun=stun:45.0.113.10:3478
  letters=23456789ABCDEFGHJKMNPQRSTUVWXYZ
  for i in $(seq "$tries"); do
    d="$LAB_DIR/aiortc$i"
    mkdir -p "$d"
    ip netns exec a "$python" lab/aiortc_link.py offer "$d" "$stun" 2> "$keep/aiortc$i-offer.err" & offerer=$!
    ip netns exec b "$python" lab/aiortc_link.py answer "$d" "$stun" > "$keep/aiortc$i.json" 2> "$keep/aiortc$i.err" || true
    wait "$offerer" || true
    code="ARC${letters:$((i % 31)):1}${letters:$((i / 31 % 31)):1}2"
    ip netns exec a "$LAB_VIMP" host --headless --signal "$LAB_SIGNAL" --code "$code" \
      --map maps/test-small.json --bots 2 --seconds 60 > "$keep/vimp$i-host.out" 2>&1 & host=$!
    for _ in $(seq 600); do grep -q "lobby code" "$keep/vimp$i-host.out" && break; sleep 0.05; done
    RUST_LOG=matchbox_socket::phases=info ip netns exec b "$LAB_VIMP" join "$LAB_SIGNAL/$code" --headless \
      --seconds 3 --json > "$keep/vimp$i.json" 2> "$keep/vimp$i.err" || true
    kill "$host" 2>/dev/null || true
    wait "$host" 2>/dev/null || true
  done
' _ "$keep" "$tries" "$python"

/usr/bin/env python3 - "$keep" "$tries" "$line" <<'PY'
import json, re, sys
keep, tries, line = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(path):
    try:
        text = open(path).read()
        return json.loads(text[text.index("{"):]) if "{" in text else None
    except (OSError, ValueError):
        return None
def pct(v, p):
    v = sorted(x for x in v if x is not None)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None
rows = {"aiortc": {"ice": [], "channels": [], "welcome": [], "join": []},
        "vimp": {"ice": [], "channels": [], "welcome": [], "join": []}}
for i in range(1, tries + 1):
    a = load(f"{keep}/aiortc{i}.json") or {}
    if not a.get("failed") and "channels_ms" in a:
        rows["aiortc"]["ice"].append(a.get("ice_ms"))
        rows["aiortc"]["channels"].append(a["channels_ms"])
        rows["aiortc"]["welcome"].append(a.get("welcome_ms"))
    v = load(f"{keep}/vimp{i}.json") or {}
    try:
        err = open(f"{keep}/vimp{i}.err").read()
    except OSError:
        err = ""
    at = lambda what: [int(m) for m in re.findall(what + r" at \+(\d+) ms", err)]
    # The joining side answers the host's offer (or, offering, has the answer in hand).
    offer_in = at("offer in") or at("answer in")
    ice, chans = at("ICE connected"), at("every data channel open: connected")
    phases = v.get("join_phases_ms") or {}
    if offer_in and chans and v.get("joined"):
        rows["vimp"]["ice"].append(ice[0] - offer_in[0] if ice else None)
        rows["vimp"]["channels"].append(chans[0] - offer_in[0])
        if phases.get("welcome") is not None and phases.get("link") is not None:
            rows["vimp"]["welcome"].append(chans[0] - offer_in[0] + phases["welcome"] - phases["link"])
        rows["vimp"]["join"].append(v.get("join_ms"))
fmt = lambda x: "—" if x is None else f"{x:.0f}"
print(f"line {line} on both homes, {tries} tries each; ms from the offer in hand, p50 / p99")
print("| stack | linked | ICE connected | every channel open | hello answered | whole join (start → first snapshot) |")
print("|---|---|---|---|---|---|")
for stack, r in rows.items():
    print(f"| {stack} | {len(r['channels'])}/{tries} | " + " | ".join(
        f"{fmt(pct(r[k], 50))} / {fmt(pct(r[k], 99))}" for k in ("ice", "channels", "welcome", "join")) + " |")
PY

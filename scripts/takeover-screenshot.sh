#!/usr/bin/env bash
# A window that takes the match over, seen: `vimp signal`, a headless host with bots, a
# window joined as a player (the successor) and a headless spectator, over real WebRTC
# inside a network namespace of their own (loopback only); KILL_AFTER_S seconds after
# the window says it shadows the host, the host is killed with SIGKILL, and the window,
# hosting on its standby thread now, saves a screenshot at its frame FRAMES.
#
#   scripts/takeover-screenshot.sh [OUT.png] [FRAMES=60] [KILL_AFTER_S=2]
#   PROFILE=debug scripts/takeover-screenshot.sh   # the dev build
#
# Pick FRAMES so that the last frame comes within 3 s of the takeover (the banner's time):
# the window logs when it took over and the PNG's time says when it was saved, so compare
# them and adjust (60 fit the release build on a 2-core machine under llvmpipe). Needs xvfb,
# xauth and mesa's Vulkan drivers (scripts/screenshot.sh installs them). Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-docs/takeover.png}")
frames=${2:-60}
kill_after=${3:-2}
profile=${PROFILE:-release}
if [[ $profile == release ]]; then cargo build --release --bin vimp >&2; else cargo build --bin vimp >&2; fi
bin=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/$profile/vimp
dir=$(mktemp -d)
mkdir -p "$(dirname "$out")"
unshare -rn bash -c '
    set -u
    ip link set lo up; ip link set lo multicast on; ip route add 224.0.0.0/4 dev lo
    bin=$1; dir=$2; out=$3; frames=$4; kill_after=$5
    export VIMP_CONFIG_DIR=$dir/config VIMP_DATA_DIR=$dir/data
    "$bin" signal --bind 127.0.0.1:3536 > "$dir/signal.out" 2>&1 &
    for _ in $(seq 100); do grep -q "listening on" "$dir/signal.out" && break; sleep 0.05; done
    "$bin" host --headless --signal ws://127.0.0.1:3536 --code K7M-P2Q --bots 3 --map maps/default.json --seconds 120 > "$dir/host.out" 2>&1 &
    host=$!
    for _ in $(seq 100); do grep -q "lobby code" "$dir/host.out" && break; sleep 0.05; done
    xvfb-run -a -s "-screen 0 1280x720x24" \
        "$bin" join k7mp2q --signal ws://127.0.0.1:3536 --name window --frames "$frames" --screenshot "$out" > "$dir/window.out" 2>&1 &
    w=$!
    # A spectator follows along; the window is the only player, so the successor.
    "$bin" join k7mp2q --signal ws://127.0.0.1:3536 --headless --spectate --name bob --seconds 120 --json > "$dir/bob.json" 2> "$dir/bob.err" &
    b=$!
    for _ in $(seq 1200); do grep -q "shadowing the host" "$dir/window.out" && break; sleep 0.05; done
    sleep "$kill_after"
    kill -9 "$host"
    echo "host killed" >&2
    wait "$w" || true
    kill "$b" 2>/dev/null || true
    kill %1 2>/dev/null || true
' _ "$bin" "$dir" "$out" "$frames" "$kill_after"
echo "logs in $dir" >&2
echo "$out"

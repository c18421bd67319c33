#!/usr/bin/env bash
# What a frame of the window costs in CPU: runs `vimp play` (a local match against bots) for a
# number of frames in a real window under xvfb and prints the CPU time per frame of the window's
# own threads (the main thread, Bevy's task pools and render thread), of the host's thread
# (`vimp-node`) and of Mesa's software rasteriser (`llvmpipe-*`, which a GPU would take over).
#
#   scripts/frame-cpu.sh [VIMP] [FRAMES]     # default: the release build, 600 frames
#
# Run it for two builds one after the other to compare them (their figures move together with
# the machine's load). Needs xvfb, xauth and mesa-vulkan-drivers (scripts/screenshot.sh installs
# them).
set -euo pipefail
cd "$(dirname "$0")/.."
vimp=${1:-${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp}
frames=${2:-600}
[[ -x $vimp ]] || { echo "no vimp binary at $vimp (cargo build --release first)" >&2; exit 2; }
command -v xvfb-run >/dev/null || { echo "xvfb-run is missing (apt-get install xvfb xauth mesa-vulkan-drivers)" >&2; exit 2; }

# A scratch config dir, so the player's own settings are neither read nor written.
export VIMP_CONFIG_DIR=$(mktemp -d)
trap 'rm -rf "$VIMP_CONFIG_DIR"' EXIT
vimp=$(realpath "$vimp")
xvfb-run -a -s "-screen 0 1280x720x24" "$vimp" play --frames "$frames" >/dev/null 2>&1 &
runner=$!

# The window's process is xvfb-run's grandchild: wait for it to show.
pid=""
for _ in $(seq 1 200); do
    pid=$(pgrep -n -f "^$vimp play --frames $frames" || true)
    [[ -n $pid ]] && break
    sleep 0.05
done
[[ -n $pid ]] || { echo "the window did not start" >&2; exit 1; }

# Each thread's CPU time (utime + stime, in clock ticks) as last seen before it ended.
declare -A ticks kind
while kill -0 "$pid" 2>/dev/null; do
    for t in /proc/"$pid"/task/*; do
        stat=$(cat "$t/stat" 2>/dev/null) || continue
        comm=$(cat "$t/comm" 2>/dev/null) || continue
        fields=(${stat##*) })
        tid=${t##*/}
        ticks[$tid]=$((fields[11] + fields[12]))
        case $comm in
            llvmpipe*) kind[$tid]=raster ;;
            vimp-node*) kind[$tid]=host ;;
            *) kind[$tid]=window ;;
        esac
    done
    sleep 0.25
done
wait "$runner" || { echo "vimp play failed" >&2; exit 1; }

declare -A sum=([window]=0 [host]=0 [raster]=0)
for tid in "${!ticks[@]}"; do
    sum[${kind[$tid]}]=$((sum[${kind[$tid]}] + ticks[$tid]))
done
hz=$(getconf CLK_TCK)
awk -v w="${sum[window]}" -v h="${sum[host]}" -v r="${sum[raster]}" -v f="$frames" -v hz="$hz" -v b="$vimp" 'BEGIN {
    printf "%s, %d frames: window %.2f ms/frame, host %.2f ms/frame, llvmpipe %.2f ms/frame\n",
        b, f, w * 1000 / hz / f, h * 1000 / hz / f, r * 1000 / hz / f
}'

#!/usr/bin/env bash
# Renders a local match in a real window on a headless machine and saves a PNG.
#
#   scripts/screenshot.sh [OUT.png] [FRAMES] [extra `vimp play` flags...]
#   POINTER=X,Y scripts/screenshot.sh ...   # the mouse pointer at X,Y in the window
#   PROFILE=dev scripts/screenshot.sh ...   # the dev build (default: release)
#
# Installs xvfb, xauth and mesa's Vulkan drivers when missing (Debian/Ubuntu, as root
# or with sudo), then runs `vimp play --frames N --screenshot OUT` under xvfb-run:
# Bevy renders on llvmpipe there, no GPU needed. With POINTER (and xdotool, installed
# when missing) the X pointer is moved into the window once it shows: the player's gun
# turns toward it (the pointer aim scheme, the default) and the crosshair is drawn there.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/screenshot.png}
frames=${2:-300}
shift $(( $# > 2 ? 2 : $# )) || true

need=()
command -v xvfb-run >/dev/null || need+=(xvfb)
command -v xauth >/dev/null || need+=(xauth)
ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
[[ -z ${POINTER:-} ]] || command -v xdotool >/dev/null || need+=(xdotool)
if ((${#need[@]})); then
    echo "installing ${need[*]}" >&2
    sudo=""
    [[ $(id -u) == 0 ]] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$(dirname "$out")"
profile=${PROFILE:-release}
cargo build --profile "$profile" --bin vimp
# A scratch config dir, so the player's own settings are neither read nor written.
export VIMP_CONFIG_DIR=${VIMP_CONFIG_DIR:-$(mktemp -d)}
if [[ -z ${POINTER:-} ]]; then
    xvfb-run -a -s "-screen 0 1280x720x24" \
        cargo run --quiet --profile "$profile" --bin vimp -- play --frames "$frames" --screenshot "$out" "$@"
else
    # The window runs in the background; xdotool waits for it to show, then moves the
    # pointer in two steps (the window sees it enter, then move).
    xvfb-run -a -s "-screen 0 1280x720x24" bash -c '
        set -euo pipefail
        frames=$1 out=$2 x=${3%,*} y=${3#*,} profile=$4
        shift 4
        cargo run --quiet --profile "$profile" --bin vimp -- play --frames "$frames" --screenshot "$out" "$@" &
        vimp=$!
        xdotool search --sync --onlyvisible --name "^vimp" >/dev/null
        xdotool mousemove $((x - 1)) "$y" mousemove "$x" "$y"
        wait "$vimp"
    ' screenshot "$frames" "$out" "$POINTER" "$profile" "$@"
fi
echo "$out"

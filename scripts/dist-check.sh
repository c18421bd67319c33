#!/usr/bin/env bash
# Proves archives from scripts/dist.sh the way a player gets them: each is unpacked in an
# empty folder and run with an empty HOME, from a folder holding nothing else, with no
# checkout and no Rust on the PATH.
#
#   scripts/dist-check.sh [--shots DIR] ARCHIVE...
#
# A Linux archive (.tar.gz): its sums hold; `vimp --version`; `vimp sim`; `vimp map check` on
# the shipped maps; a host and a friend joining it by its invite, in a private network
# namespace of their own; and the window under xvfb for 120 frames, with a screenshot (saved in
# DIR as dist-window.png with --shots). A Windows archive (.zip): its sums hold; `vimp.exe
# --version`, `vimp.exe sim` and `vimp.exe map check` under wine. Given both, the two sims must
# end in the same state hash (same map, seed and bots → same match on either system). Installs
# xvfb, mesa's Vulkan drivers and wine from Debian's packages when they are missing. Prints the
# figures it saw (the join's link → first snapshot among them) and exits non-zero at the first
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."

shots=
while [ $# -gt 0 ]; do
  case "$1" in
    --shots) shots="${2:?--shots needs a directory}"; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "dist-check.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "dist-check.sh: name the archives to check (see --help)" >&2; exit 2; }

started=$(date +%s)
step() { printf '\n== %s (%s, %d s in)\n' "$1" "$(date +%T)" "$(( $(date +%s) - started ))"; }
fail() { echo "dist-check.sh: $*" >&2; exit 1; }

# need_packages: Debian packages, installed when missing.
source scripts/need-packages.sh

# A field of a JSON object on stdin.
field() { /usr/bin/python3 -c 'import json,sys; v=json.load(sys.stdin); [v:=v[k] for k in sys.argv[1:]]; print(v)' "$@"; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
[ -z "$shots" ] || { mkdir -p "$shots"; shots=$(cd "$shots" && pwd); }

# Runs a command as a player's machine would: empty HOME, the system's PATH alone.
PLAYER_PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
as_player() {
  mkdir -p -m 700 "$home/.run"
  env -i HOME="$home" PATH="$PLAYER_PATH" LANG=C.UTF-8 XDG_RUNTIME_DIR="$home/.run" "$@"
}

# run_binary NAME RUN...: `--version`, `sim` (its state hash left in $hash) and `map check` on
# the shipped maps, each run as RUN... (a command and the binary).
run_binary() {
  local name=$1; shift
  step "$name --version"
  "$@" --version
  step "$name sim (a headless match of bots, the default map)"
  local sim; sim=$("$@" sim --seconds 20 --json) || fail "$name sim failed"
  hash=$(field state_hash <<<"$sim")
  echo "tick p50 $(field tick_us_p50 <<<"$sim") µs, p99 $(field tick_us_p99 <<<"$sim") µs, state hash $hash"
  step "$name map check on the shipped maps"
  "$@" map check default.json rooms bridge
}

check_linux() {
  local archive=$1 root="$scratch/linux"
  step "unpacking $(basename "$archive") in an empty folder"
  mkdir -p "$root/unpacked" "$root/home" "$root/cwd"
  tar -xzf "$archive" -C "$root/unpacked"
  local dir; dir=$(echo "$root"/unpacked/*/)
  home="$root/home"
  (cd "$dir" && sha256sum --quiet -c SHA256SUMS) || fail "the archive's sums do not hold"
  for f in vimp README.md vimp.desktop vimp.png licenses.html; do
    [ -s "$dir/$f" ] || fail "the archive has no $f"
  done
  as_player bash -c 'command -v cargo || command -v rustc' && fail "Rust is on the player's PATH"
  local vimp="$dir/vimp"
  cd "$root/cwd"

  run_binary vimp as_player "$vimp"
  linux_hash=$hash

  step "a host and a friend joining it by its invite, in a private network namespace"
  # The namespace has loopback alone; both run in it, the host serving its own room.
  local join
  join=$(as_player unshare -rn bash -c '
    set -euo pipefail
    ip link set lo up; ip link set lo multicast on; ip route add 224.0.0.0/4 dev lo
    "$1" host --headless --bind 127.0.0.1:3536 --code K7MP2Q --no-port-mapping --bots 1 --seconds 40 \
      >"$2/host.out" 2>"$2/host.err" &
    host=$!
    # The host says its invite once its room is served.
    for _ in $(seq 200); do grep -q "join with" "$2/host.out" 2>/dev/null && break; sleep 0.1; done
    grep -q "join with" "$2/host.out" || { cat "$2/host.err" >&2; exit 1; }
    "$1" join ws://127.0.0.1:3536/K7MP2Q --headless --name Ann --seconds 5 --json 2>"$2/join.err"
    kill "$host" 2>/dev/null || true
  ' sh "$vimp" "$root") || { cat "$root/host.err" "$root/join.err" >&2 || true; fail "the host and join failed"; }
  [ "$(field joined <<<"$join")" = True ] || { echo "$join" >&2; fail "the friend did not get in"; }
  /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
took, phases, rate = r["join_ms"], r["join_phases_ms"], r["snapshots_per_s"]
first = phases["first_snapshot"] - phases["link"]
print(f"joined in {took:.0f} ms; link → first snapshot {first:.0f} ms; {rate:.1f} snapshots/s")' <<<"$join" || fail "the join's figures are missing"

  step "the window under xvfb, 120 frames and a screenshot"
  need_packages xvfb xauth mesa-vulkan-drivers
  as_player xvfb-run -a -s "-screen 0 1280x720x24" "$vimp" play --frames 120 --screenshot "$root/window.png" \
    || fail "the window did not run"
  # A drawn frame has many colours; a blank one a few.
  /usr/bin/python3 - "$root/window.png" <<'EOF' || fail "the screenshot is blank"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", data[16:24])
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
values = len(set(raw[i] for i in range(0, len(raw), 7)))
print(f"screenshot {w}x{h}, {values} distinct byte values")
sys.exit(0 if values > 32 else 1)
EOF
  [ -z "$shots" ] || cp "$root/window.png" "$shots/dist-window.png"
}

check_windows() {
  local archive=$1 root="$scratch/windows"
  step "unpacking $(basename "$archive") in an empty folder"
  mkdir -p "$root/unpacked" "$root/home" "$root/cwd"
  /usr/bin/python3 -m zipfile -e "$archive" "$root/unpacked"
  local dir; dir=$(echo "$root"/unpacked/*/)
  home="$root/home"
  (cd "$dir" && sha256sum --quiet -c SHA256SUMS) || fail "the archive's sums do not hold"
  need_packages wine wine64 gcc-mingw-w64-x86-64
  local wine; wine=$(command -v wine64 || command -v wine)
  cd "$root/cwd"
  # A fresh wine prefix, without the .NET and HTML engines it would offer to download.
  winerun() {
    env -i HOME="$home" PATH="$PLAYER_PATH" WINEPREFIX="$root/wine" WINEDEBUG=-all \
      WINEDLLOVERRIDES="mscoree,mshtml=" "$wine" "$@"
  }

  step "a wine prefix"
  winerun wineboot -i >/dev/null 2>&1 || true
  local system32="$root/wine/drive_c/windows/system32"
  [ -d "$system32" ] || fail "wine made no prefix in $root/wine"
  if [ ! -e "$system32/bcryptprimitives.dll" ]; then
    # Wine 8 (Debian 12's) has no bcryptprimitives.dll, where Windows 10 and later keep the
    # ProcessPrng that Rust's std draws its random numbers from. A stand-in built here with
    # mingw-w64 (RtlGenRandom underneath) goes into wine's own system folder; the archive is
    # not touched.
    echo "this wine has no bcryptprimitives.dll: a stand-in goes into its system32"
    cat > "$root/prng.c" <<'EOF'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        length -= n;
    }
    return TRUE;
}
EOF
    printf 'LIBRARY bcryptprimitives\nEXPORTS\n    ProcessPrng\n' > "$root/prng.def"
    x86_64-w64-mingw32-gcc -O2 -shared -o "$system32/bcryptprimitives.dll" "$root/prng.c" "$root/prng.def" -ladvapi32
  fi

  run_binary "vimp.exe (under wine)" winerun "$dir/vimp.exe"
  windows_hash=$hash
}

for archive in "$@"; do
  archive=$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")
  case "$archive" in
    *.tar.gz) check_linux "$archive" ;;
    *.zip) check_windows "$archive" ;;
    *) fail "$archive is neither a .tar.gz nor a .zip" ;;
  esac
done
# The same map, seed and bots give the same match on both systems.
if [ -n "${linux_hash:-}" ] && [ -n "${windows_hash:-}" ]; then
  step "the same match on Linux and on Windows"
  [ "$linux_hash" = "$windows_hash" ] || fail "vimp sim's state hash differs: $linux_hash on Linux, $windows_hash on Windows"
  echo "state hash $linux_hash on both"
fi
step "the archives hold"

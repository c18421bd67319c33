#!/usr/bin/env bash
# Builds what players download: an archive per platform holding the game (the `dist` profile,
# with sound and gamepads), a README for players, the licences of every crate it is built from,
# a desktop entry and an icon, and SHA-256 sums.
#
#   scripts/dist.sh                      # Linux x86_64: vimp-VERSION-x86_64-linux.tar.gz
#   scripts/dist.sh --windows            # also Windows x86_64: vimp-VERSION-x86_64-windows.zip
#   scripts/dist.sh --only-windows       # Windows alone
#   scripts/dist.sh --out DIR            # where the archives go (default $CARGO_TARGET_DIR/archives)
#   scripts/dist.sh --profile release    # a quicker build of the same archive, to try the script
#
# Installs what it needs and is missing: the ALSA and udev headers (sound, gamepads) from
# Debian's packages, mingw-w64 and the Rust target for Windows, and cargo-about for the
# licences. Prints each step, the sizes, and the archives' paths and sums at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

linux=1 windows=0 profile=dist out="$CARGO_TARGET_DIR/archives"
while [ $# -gt 0 ]; do
  case "$1" in
    --windows) windows=1 ;;
    --only-windows) windows=1 linux=0 ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    --profile) profile="${2:?--profile needs a name (dist or release)}"; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dist.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

started=$(date +%s)
step() { printf '\n== %s (%s, %d s in)\n' "$1" "$(date +%T)" "$(( $(date +%s) - started ))"; }
size() { stat -c %s "$1" | awk '{ printf "%.1f MB", $1 / 1e6 }'; }

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
features=audio,gamepad

# need_packages: Debian packages, installed when missing.
source scripts/need-packages.sh

if ! cargo about --version >/dev/null 2>&1; then
  step "installing cargo-about (the licences)"
  cargo install --locked cargo-about --version 0.9.3 --features cli
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step "gathering the licences of every crate in the build (cargo about)"
cargo about generate --locked --features "$features" -c dist/about.toml dist/about.hbs -o "$work/licenses.html"

# stage NAME BINARY [FILE...]: the archive's folder, with the binary, the files every archive
# has and those named.
stage() {
  local dir="$work/$1"
  mkdir -p "$dir"
  cp "$2" "$dir/"
  shift 2
  [ $# -eq 0 ] || cp "$@" "$dir/"
  cp dist/PLAYING.md "$dir/README.md"
  cp assets/icon.png "$dir/vimp.png"
  cp "$work/licenses.html" "$dir/licenses.html"
  (cd "$dir" && sha256sum -- * | grep -v ' SHA256SUMS$' > SHA256SUMS)
}

archives=()

if [ "$linux" = 1 ]; then
  need_packages pkg-config libasound2-dev libudev-dev
  step "building vimp for Linux x86_64 (profile $profile, features $features)"
  cargo build --locked --profile "$profile" --features "$features" --bin vimp
  bin="$CARGO_TARGET_DIR/$profile/vimp"
  echo "vimp: $(size "$bin")"
  name="vimp-$version-x86_64-linux"
  stage "$name" "$bin" dist/vimp.desktop
  step "packing $name.tar.gz"
  tar -C "$work" --owner=0 --group=0 --sort=name -czf "$out/$name.tar.gz" "$name"
  archives+=("$name.tar.gz")
fi

if [ "$windows" = 1 ]; then
  need_packages gcc-mingw-w64-x86-64
  rustup target list --installed | grep -qx x86_64-pc-windows-gnu || rustup target add x86_64-pc-windows-gnu
  step "building vimp.exe for Windows x86_64 (profile $profile, features $features, mingw-w64)"
  cargo build --locked --profile "$profile" --features "$features" --bin vimp --target x86_64-pc-windows-gnu
  bin="$CARGO_TARGET_DIR/x86_64-pc-windows-gnu/$profile/vimp.exe"
  echo "vimp.exe: $(size "$bin")"
  name="vimp-$version-x86_64-windows"
  stage "$name" "$bin"
  step "packing $name.zip"
  rm -f "$out/$name.zip"
  (cd "$work" && /usr/bin/python3 -m zipfile -c "$out/$name.zip" "$name")
  archives+=("$name.zip")
fi

(cd "$out" && sha256sum -- "${archives[@]}" > SHA256SUMS)
step "done"
for a in "${archives[@]}"; do echo "$out/$a: $(size "$out/$a")"; done
cat "$out/SHA256SUMS"

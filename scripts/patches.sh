#!/usr/bin/env bash
# The patched crates of patches/ as diffs against the published ones.
#
# Each patches/NAME is the crate NAME as published on crates.io (the version its Cargo.toml
# names) with the changes in patches/NAME.diff: a unified diff over the files the copy keeps
# (the crate's examples, tests and benches it leaves out; a file the copy adds, such as its
# PATCHED.md, is in the diff as a new file). `check` rebuilds every copy from the crate in
# Cargo's registry plus its diff and compares it with patches/NAME, file by file; `refresh`
# writes the diffs again from the copies, after a change to a copy.
#
#   scripts/patches.sh check [NAME...]     exit 1 naming each copy that is not its crate plus its diff
#   scripts/patches.sh refresh [NAME...]   rewrite patches/NAME.diff from patches/NAME
#
# The published crates are fetched into Cargo's registry (${CARGO_HOME:-~/.cargo}) through a
# throwaway package, as any build fetches them.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: scripts/patches.sh check|refresh [NAME...]" >&2; exit 2; }
mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in check | refresh) ;; *) usage ;; esac

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in patches/*/; do names+=("$(basename "$dir")"); done
fi
version() { sed -n 's/^version = "\(.*\)"/\1/p' "patches/$1/Cargo.toml" | head -1; }
for name in "${names[@]}"; do
  [ -f "patches/$name/Cargo.toml" ] || { echo "patches/$name: no such patched crate" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The published crates, into Cargo's registry.
mkdir -p "$work/fetch/src"
: > "$work/fetch/src/lib.rs"
{
  printf '[package]\nname = "patches-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n'
  for name in "${names[@]}"; do
    printf '%s = { version = "=%s", default-features = false }\n' "$name" "$(version "$name")"
  done
} > "$work/fetch/Cargo.toml"
(cd "$work/fetch" && cargo fetch --quiet)
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"

drifted=()
for name in "${names[@]}"; do
  published=$(ls -d "$registry"/*/"$name-$(version "$name")" 2>/dev/null | head -1)
  [ -n "$published" ] || { echo "$name $(version "$name") is not in $registry" >&2; exit 1; }
  # The published files the copy keeps, as the copy names them.
  mkdir -p "$work/a/$name"
  (cd "patches/$name" && find . -type f | sed 's|^\./||' | sort) > "$work/$name.files"
  while IFS= read -r file; do
    if [ -f "$published/$file" ]; then
      mkdir -p "$work/a/$name/$(dirname "$file")"
      cp "$published/$file" "$work/a/$name/$file"
    fi
  done < "$work/$name.files"
  case "$mode" in
    refresh)
      mkdir -p "$work/b"
      cp -r "patches/$name" "$work/b/$name"
      # No timestamps in the headers: the same copy always gives the same diff.
      (cd "$work" && diff -ruN "a/$name" "b/$name" || true) \
        | sed -E 's/^(---|\+\+\+) ([^\t]+)\t.*$/\1 \2/' > "patches/$name.diff"
      echo "patches/$name.diff: $(grep -c '^diff ' "patches/$name.diff") files changed against $name $(version "$name")"
      ;;
    check)
      if [ ! -f "patches/$name.diff" ]; then
        echo "patches/$name: no patches/$name.diff (scripts/patches.sh refresh $name writes it)" >&2
        drifted+=("$name")
        continue
      fi
      if ! (cd "$work/a/$name" && git apply -p2 "$OLDPWD/patches/$name.diff") > "$work/$name.patch.log" 2>&1; then
        echo "patches/$name.diff does not apply to $name $(version "$name"):" >&2
        cat "$work/$name.patch.log" >&2
        drifted+=("$name")
        continue
      fi
      if ! diff -r "$work/a/$name" "patches/$name" > "$work/$name.drift"; then
        echo "patches/$name is not $name $(version "$name") plus patches/$name.diff:" >&2
        head -40 "$work/$name.drift" >&2
        drifted+=("$name")
        continue
      fi
      echo "patches/$name: $name $(version "$name") plus patches/$name.diff ($(grep -c '^diff ' "patches/$name.diff") files)"
      ;;
  esac
done

if [ ${#drifted[@]} -gt 0 ]; then
  echo "drifted: ${drifted[*]} (after changing a copy on purpose: scripts/patches.sh refresh)" >&2
  exit 1
fi

# Sourced by scripts/dist.sh and scripts/dist-check.sh (not run alone):
#   need_packages PACKAGE...   installs the Debian packages that are missing, saying so
# through the sourcing script's `step`.
need_packages() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    step "installing ${missing[*]} (Debian packages)"
    local sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

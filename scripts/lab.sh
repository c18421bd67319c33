#!/usr/bin/env bash
# The home-network lab: players in homes behind NAT routers with a home firewall, and a public
# segment with `vimp signal` and coturn, all network namespaces on this machine inside a private
# network and mount namespace tree (`unshare -n -m`, tmpfs on /run): no packet can leave.
#
#   scripts/lab.sh [OPTIONS] -- COMMAND [ARG...]
#
# Builds the lab, runs COMMAND in the lab's own root namespace (the "internet", which can reach
# every namespace), then tears it all down. COMMAND starts the players' processes with
# `ip netns exec HOME …`. Needs root, iproute2, iptables and coturn
# (`apt-get install iptables coturn`; coturn not with --no-turn or --no-signal). A `upnp` home
# also needs miniupnpd and iptables-legacy: when they are missing the script installs them
# (`apt-get install miniupnpd miniupnpd-iptables miniupnpc`, the Debian service kept from
# starting; miniupnpc's `upnpc` is a client to try the router with).
#
# Options:
#   --home NAME:NAT     a home (repeatable; NAME in letters, digits and _, short: it is part of
#                       interface names); NAT is
#                         `cone`      Linux MASQUERADE, port-preserving: what most home routers do
#                         `symmetric` MASQUERADE --random-fully: a new port for every
#                                     destination, so only a TURN relay gets through
#                         `upnp`      a cone router with the same firewall that also maps
#                                     ports on request: miniupnpd (UPnP IGD, NAT-PMP and PCP;
#                                     secure mode: a machine maps only to itself, ports
#                                     1024-65535), its rules in iptables-legacy; the player's
#                                     machine is on the router's LAN (below)
#                         `public`    no router: the player's machine is on the public segment
#   --line NAME:PROFILE the home's access line through the userspace TUN conditioner: PROFILE is
#                       `DELAY_MS[:JITTER_MS[:LOSS_PERCENT]]`, applied each way (so 50:10:1 adds
#                       about 100 ± 20 ms to a round trip and loses about 2 % of round trips)
#   --uplink NAME:RATE  caps the home's upload with tbf on its router's wan0, e.g. `8mbit`
#   --vimp PATH         the vimp binary (default: $CARGO_TARGET_DIR/release/vimp); with
#                       --no-signal it need not exist (COMMAND may not use it)
#   --netcond PATH      the conditioner (default: beside the vimp binary, `vimp-netcond`)
#   --no-turn           no coturn (STUN from `vimp signal` itself)
#   --no-signal         nothing on the public segment: no `vimp signal`, no coturn (the game's
#                       default setup, where the host runs its own rendezvous)
#
# COMMAND sees:
#   LAB_SIGNAL      ws://45.0.113.10:3536, the rendezvous (empty with --no-signal)
#   LAB_HOMES       the homes' names, space-separated; each has a player machine of that name
#   LAB_ADDR_NAME   home NAME's player machine's address, e.g. LAB_ADDR_a=192.168.1.10
#   LAB_PUBLIC_NAME home NAME's public address (its router's, or its machine's when public),
#                   e.g. LAB_PUBLIC_a=45.0.113.21
#   LAB_DIR         a scratch directory (logs: signal.log, turn.log, netcond-HOME.log,
#                   miniupnpd-HOME.log, miniupnpd-HOME.init.log; miniupnpd-HOME.conf)
#   LAB_VIMP        the vimp binary
#
# Addresses: the public segment is 45.0.113.0/24 (not a documentation block: miniupnpd refuses
# reserved ones as its external address; nothing leaves the namespaces): this namespace at .1,
# the rendezvous at .10, home N's router (or public machine) at .20+N. Home N's LAN is
# 192.168.N.0/24 with the router at .1. In a `cone` or `symmetric` home the line is .2 on it
# and the player's machine is 10.N.0.10 behind the line. In a `upnp` home the player's machine
# is 192.168.N.10 on the router's LAN bridge (SSDP has TTL 1, and miniupnpd answers only its own
# subnet), default route and 224.0.0.0/4 via eth0, and the line is on the router's WAN side: a
# transparent proxy-ARP hop (address .120+N, for ARP only) between wan0 and the public segment.
set -euo pipefail

homes=() lines=() uplinks=() turn=1 signal=1
vimp="${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp" netcond=""
while [ $# -gt 0 ]; do
  case "$1" in
    --home) homes+=("$2"); shift 2 ;;
    --line) lines+=("$2"); shift 2 ;;
    --uplink) uplinks+=("$2"); shift 2 ;;
    --vimp) vimp="$2"; shift 2 ;;
    --netcond) netcond="$2"; shift 2 ;;
    --no-turn) turn=0; shift ;;
    --no-signal) signal=0; turn=0; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "lab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "lab.sh: no COMMAND (see --help)" >&2; exit 2; }
[ ${#homes[@]} -gt 0 ] || { echo "lab.sh: no --home (see --help)" >&2; exit 2; }
upnp=0
for spec in "${homes[@]}"; do
  name="${spec%%:*}" nat="${spec#*:}"
  [[ "$spec" == *:* && "$name" =~ ^[A-Za-z0-9_]+$ ]] || {
    echo "lab.sh: --home $spec? (NAME:NAT, NAME in letters, digits and _)" >&2; exit 2; }
  case "$nat" in
    cone|symmetric|public) ;;
    upnp) upnp=1 ;;
    *) echo "lab.sh: --home $spec: NAT $nat? (cone, symmetric, upnp, public)" >&2; exit 2 ;;
  esac
done
vimp="$(realpath -m "$vimp")"
if [ "$signal" = 1 ] && [ ! -x "$vimp" ]; then
  echo "lab.sh: no vimp binary at $vimp (cargo build --release, or --vimp)" >&2; exit 2
fi
[ -n "$netcond" ] || netcond="$(dirname "$vimp")/vimp-netcond"
[ "$(id -u)" = 0 ] || { echo "lab.sh: needs root (network namespaces, iptables)" >&2; exit 2; }
for tool in ip ss iptables unshare; do
  command -v "$tool" >/dev/null || { echo "lab.sh: needs $tool (apt-get install iproute2 iptables util-linux)" >&2; exit 2; }
done
if [ "$turn" = 1 ] && ! command -v turnserver >/dev/null; then
  echo "lab.sh: needs coturn's turnserver (apt-get install coturn), or --no-turn" >&2; exit 2
fi
# A upnp home's router: miniupnpd and the legacy iptables it writes to, installed on first use
# (outside the lab's namespaces: this needs the package mirror). The Debian service must not
# start: debconf says so, and so does a policy-rc.d for the install when the machine has none.
have_upnp_tools() {
  command -v miniupnpd >/dev/null && command -v iptables-legacy >/dev/null &&
    [ -f /etc/miniupnpd/iptables_init.sh ]
}
if [ "$upnp" = 1 ] && [ -z "${LAB_INSIDE:-}" ] && ! have_upnp_tools; then
  echo "lab.sh: a upnp home needs miniupnpd; installing miniupnpd miniupnpd-iptables miniupnpc" >&2
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy"
  fi
  echo "miniupnpd miniupnpd/start_daemon boolean false" | debconf-set-selections 2>/dev/null || true
  installed=1
  { apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      miniupnpd miniupnpd-iptables miniupnpc >/dev/null; } || installed=0
  [ -z "$policy" ] || rm -f "$policy"
  [ "$installed" = 1 ] || { echo "lab.sh: apt-get install miniupnpd miniupnpd-iptables miniupnpc failed" >&2; exit 2; }
fi
if [ "$upnp" = 1 ] && ! have_upnp_tools; then
  echo "lab.sh: a upnp home needs miniupnpd, /etc/miniupnpd/iptables_init.sh and iptables-legacy" \
    "(apt-get install miniupnpd miniupnpd-iptables)" >&2
  exit 2
fi

# Into a private network and mount namespace tree, once.
if [ -z "${LAB_INSIDE:-}" ]; then
  script="$(realpath "$0")"
  args=()
  for h in "${homes[@]}"; do args+=(--home "$h"); done
  for l in "${lines[@]}"; do args+=(--line "$l"); done
  for u in "${uplinks[@]}"; do args+=(--uplink "$u"); done
  [ "$turn" = 1 ] || args+=(--no-turn)
  [ "$signal" = 1 ] || args+=(--no-signal)
  exec env LAB_INSIDE=1 unshare -n -m --propagation private "$script" "${args[@]}" \
    --vimp "$vimp" --netcond "$netcond" -- "$@"
fi

mount -t tmpfs lab-run /run
mkdir -p /run/netns
LAB_DIR="$(mktemp -d /run/lab.XXXXXX)"
export LAB_DIR LAB_VIMP="$vimp"
# The rendezvous's database, and every identity, live in the scratch directory: not the
# data folder of whoever runs the lab.
export VIMP_DATA_DIR="$LAB_DIR/data" VIMP_CONFIG_DIR="$LAB_DIR/config"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# The internet: a bridge in this namespace.
pub=45.0.113
ip link set lo up
ip link add wan type bridge
ip addr add "$pub.1/24" dev wan
ip link set wan up

# veth NS IFACE ADDR: a namespace NS on the public bridge with address ADDR on IFACE.
on_wan() {
  ip link add "$2-$1" type veth peer name "$2" netns "$1"
  ip link set "$2-$1" master wan up
  ip -n "$1" addr add "$3/24" dev "$2"
  ip -n "$1" link set "$2" up
  ip -n "$1" route add default via "$pub.1"
}
sysctl_in() { ip netns exec "$1" sysctl -qw "$2"; }

# The rendezvous: vimp signal and coturn. A TURN relay must be able to send anywhere, so the
# public segment has a default route (to this namespace).
if [ "$signal" = 1 ]; then
  ip netns add rdv
  ip -n rdv link set lo up
  on_wan rdv eth0 "$pub.10"
  secret="lab-secret-$RANDOM"
  if [ "$turn" = 1 ]; then
    # vimp signal first, without --no-stun, as people start them: it leaves UDP 3478 to the
    # TURN server it hands out (which answers STUN there itself), so coturn still gets it.
    VIMP_TURN_SECRET="$secret" ip netns exec rdv "$vimp" signal --bind "$pub.10:3536" \
      --turn "turn:$pub.10:3478" \
      > "$LAB_DIR/signal.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do grep -q listening "$LAB_DIR/signal.log" 2>/dev/null && break; sleep 0.05; done
    # coturn as deploy/turnserver.conf sets it up (what it relays to, its quotas), with the
    # lab's address and secret.
    conf="$(dirname "$0")/../deploy/turnserver.conf"
    { sed -e "s/^static-auth-secret=.*/static-auth-secret=$secret/" -e 's/^realm=.*/realm=vimp.lab/' "$conf"
      printf 'listening-ip=%s\nrelay-ip=%s\nno-software-attribute\npidfile=%s\n' "$pub.10" "$pub.10" "$LAB_DIR/turn.pid"
    } > "$LAB_DIR/turnserver.conf"
    ip netns exec rdv turnserver -c "$LAB_DIR/turnserver.conf" > "$LAB_DIR/turn.log" 2>&1 &
  else
    ip netns exec rdv "$vimp" signal --bind "$pub.10:3536" --stun-bind "$pub.10:3478" \
      > "$LAB_DIR/signal.log" 2>&1 &
  fi
  pids+=($!)
fi

# Homes.
profile_of() { # NAME LIST...: the value after NAME: in LIST, or nothing
  local name="$1"; shift
  for item in "$@"; do [ "${item%%:*}" = "$name" ] && { echo "${item#*:}"; return; }; done
  return 0
}
# conditioner NAME LINE_NS DOWN_CIDR [UP_TO]: home NAME's line profile, if any, through tun0 in
# LINE_NS: everything the line forwards from up0 (only what is to UP_TO, when given) and from
# down0 goes through the conditioner, which writes it back for the main table to route on.
conditioner() {
  local name="$1" line="$2" down="$3" to=() cond
  [ -z "${4:-}" ] || to=(to "$4")
  cond="$(profile_of "$name" "${lines[@]}")"
  [ -n "$cond" ] || return 0
  [ -x "$netcond" ] || { echo "lab.sh: no conditioner at $netcond (cargo build -p vimp-lab, or --netcond)" >&2; exit 2; }
  ip netns exec "$line" "$netcond" --tun tun0 --down "$down" --profile "$cond" \
    > "$LAB_DIR/netcond-$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do ip -n "$line" link show tun0 >/dev/null 2>&1 && break; sleep 0.05; done
  ip -n "$line" link show tun0 >/dev/null 2>&1 || {
    echo "lab.sh: the conditioner made no tun0 in $line:" >&2; cat "$LAB_DIR/netcond-$name.log" >&2; exit 1; }
  ip -n "$line" link set tun0 up
  for dev in all default up0 down0 tun0; do sysctl_in "$line" "net.ipv4.conf.$dev.rp_filter=0"; done
  ip -n "$line" route add default dev tun0 table 100
  ip -n "$line" rule add iif up0 "${to[@]}" lookup 100
  ip -n "$line" rule add iif down0 lookup 100
}
names=()
n=0
for spec in "${homes[@]}"; do
  n=$((n + 1))
  name="${spec%%:*}" nat="${spec#*:}"
  names+=("$name")
  public="$pub.$((20 + n))"
  export "LAB_PUBLIC_$name=$public"
  ip netns add "$name"
  ip -n "$name" link set lo up
  # webrtc's mDNS socket needs a multicast route.
  ip -n "$name" link set lo multicast on
  if [ "$nat" = public ]; then
    on_wan "$name" eth0 "$public"
    export "LAB_ADDR_$name=$public"
    continue
  fi
  router="$name-router" line="$name-line"
  ip netns add "$router"
  ip netns add "$line"
  ip -n "$router" link set lo up
  ip -n "$line" link set lo up
  sysctl_in "$router" net.ipv4.ip_forward=1
  sysctl_in "$line" net.ipv4.ip_forward=1
  if [ "$nat" = upnp ]; then
    # public segment — line up0 (proxy ARP) — line down0 — router wan0; router br-lan — player
    # eth0. The line owns no address on the segment (its .120+N is only a source for its own
    # ARP requests): it answers ARP for the router upstream and for everyone else downstream.
    ip link add "up0-$line" type veth peer name up0 netns "$line"
    ip link set "up0-$line" master wan up
    ip -n "$line" link add down0 type veth peer name wan0 netns "$router"
    ip -n "$line" addr add "$pub.$((120 + n))/32" dev up0
    ip -n "$line" link set up0 up
    ip -n "$line" link set down0 up
    ip -n "$line" route add "$public/32" dev down0
    ip -n "$line" route add "$pub.0/24" dev up0
    ip -n "$line" route add default via "$pub.1" dev up0
    for dev in up0 down0; do
      sysctl_in "$line" "net.ipv4.conf.$dev.proxy_arp=1"
      sysctl_in "$line" "net.ipv4.neigh.$dev.proxy_delay=0" # else up to 0.8 s per proxied ARP
    done
    ip -n "$router" addr add "$public/24" dev wan0
    ip -n "$router" link set wan0 up
    ip -n "$router" route add default via "$pub.1"
    ip -n "$router" link add br-lan type bridge
    ip -n "$router" addr add "192.168.$n.1/24" dev br-lan
    ip -n "$router" link set br-lan up
    ip -n "$router" link add lan0 type veth peer name eth0 netns "$name"
    ip -n "$router" link set lan0 master br-lan up
    ip -n "$name" addr add "192.168.$n.10/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" route add default via "192.168.$n.1"
    # Multicast leaves on the LAN: SSDP's M-SEARCH must reach the router.
    ip -n "$name" route add 224.0.0.0/4 dev eth0
    export "LAB_ADDR_$name=192.168.$n.10"
    # Only what is to the router goes through the conditioner from upstream: with every packet
    # routed to tun0, the line would answer ARP for the whole segment.
    conditioner "$name" "$line" "$public/32" "$public/32"
    # miniupnpd-iptables writes through libiptc, to the legacy tables: this router's NAT and
    # firewall are made there too (with its MASQUERADE in the nft tables a mapping's DNAT is
    # never applied), and the nft tables stay empty.
    ipt=(ip netns exec "$router" iptables-legacy -w)
  else
    # router lan0 — line up0; line down0 — player eth0
    on_wan "$router" wan0 "$public"
    ip -n "$router" link add lan0 type veth peer name up0 netns "$line"
    ip -n "$router" addr add "192.168.$n.1/24" dev lan0
    ip -n "$router" link set lan0 up
    ip -n "$router" route add "10.$n.0.0/24" via "192.168.$n.2"
    ip -n "$line" addr add "192.168.$n.2/24" dev up0
    ip -n "$line" link set up0 up
    ip -n "$line" link add down0 type veth peer name eth0 netns "$name"
    ip -n "$line" addr add "10.$n.0.1/24" dev down0
    ip -n "$line" link set down0 up
    ip -n "$line" route add default via "192.168.$n.1"
    ip -n "$name" addr add "10.$n.0.10/24" dev eth0
    ip -n "$name" link set eth0 up
    ip -n "$name" route add default via "10.$n.0.1"
    ip -n "$name" route add 224.0.0.0/4 dev lo
    export "LAB_ADDR_$name=10.$n.0.10"
    conditioner "$name" "$line" "10.$n.0.0/24"
    ipt=(ip netns exec "$router" iptables)
  fi
  # The NAT, and the home firewall: nothing unsolicited gets in, to the LAN or to the router
  # itself (a router that lets such packets reach its own address confirms conntrack entries
  # that steal mapped ports and break hole punching).
  random=()
  [ "$nat" = symmetric ] && random=(--random-fully)
  "${ipt[@]}" -t nat -A POSTROUTING -o wan0 -j MASQUERADE "${random[@]}"
  "${ipt[@]}" -A INPUT -i wan0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  "${ipt[@]}" -A INPUT -i wan0 -j DROP
  "${ipt[@]}" -A FORWARD -i wan0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  "${ipt[@]}" -A FORWARD -i wan0 -j DROP
  rate="$(profile_of "$name" "${uplinks[@]}")"
  if [ -n "$rate" ]; then
    ip netns exec "$router" tc qdisc add dev wan0 root tbf rate "$rate" burst 32kbit latency 400ms
  fi
  if [ "$nat" = upnp ]; then
    # miniupnpd's chains, by Debian's own script, which inserts (-I) its jumps at the head of nat
    # PREROUTING and POSTROUTING, mangle PREROUTING and filter FORWARD (so before the DROP
    # above). It runs `which iptables`, the nft one here (update-alternatives): a legacy
    # `iptables` goes first on its PATH.
    mkdir -p "$LAB_DIR/legacy-bin"
    ln -sf "$(command -v iptables-legacy)" "$LAB_DIR/legacy-bin/iptables"
    ip netns exec "$router" env PATH="$LAB_DIR/legacy-bin:$PATH" \
      sh /etc/miniupnpd/iptables_init.sh -i wan0 > "$LAB_DIR/miniupnpd-$name.init.log" 2>&1 || {
      echo "lab.sh: miniupnpd's iptables_init.sh failed in $router:" >&2
      cat "$LAB_DIR/miniupnpd-$name.init.log" >&2; exit 1; }
    conf="$LAB_DIR/miniupnpd-$name.conf"
    cat > "$conf" <<CONF
ext_ifname=wan0
listening_ip=br-lan
http_port=5000
enable_upnp=yes
enable_natpmp=yes
secure_mode=yes
system_uptime=no
ipv6_disable=yes
lease_file=$LAB_DIR/miniupnpd-$name.leases
uuid=$(cat /proc/sys/kernel/random/uuid)
friendly_name=vimp lab router $name
min_lifetime=120
max_lifetime=86400
allow 1024-65535 192.168.$n.0/24 1024-65535
deny 0-65535 0.0.0.0/0 0-65535
CONF
    # enable_natpmp serves PCP as well (miniupnpd is built with it). -d: in the foreground,
    # logging to stderr.
    ip netns exec "$router" miniupnpd -f "$conf" -d -P "$LAB_DIR/miniupnpd-$name.pid" \
      > "$LAB_DIR/miniupnpd-$name.log" 2>&1 &
    pids+=($!)
    upnpd=$!
    ready=0
    for _ in $(seq 200); do
      if ip netns exec "$router" ss -Hlun 'sport = :5351' | grep -q . &&
        ip netns exec "$router" ss -Hltn 'sport = :5000' | grep -q .; then ready=1; break; fi
      kill -0 "$upnpd" 2>/dev/null || break
      sleep 0.05
    done
    if [ "$ready" = 0 ] || grep -q "not suitable for external IP" "$LAB_DIR/miniupnpd-$name.log"; then
      echo "lab.sh: miniupnpd did not start in $router:" >&2; cat "$LAB_DIR/miniupnpd-$name.log" >&2; exit 1
    fi
  fi
done
export LAB_HOMES="${names[*]}" LAB_SIGNAL=""

# Ready when the rendezvous listens.
if [ "$signal" = 1 ]; then
  LAB_SIGNAL="ws://$pub.10:3536"
  for _ in $(seq 200); do grep -q listening "$LAB_DIR/signal.log" 2>/dev/null && break; sleep 0.05; done
  grep -q listening "$LAB_DIR/signal.log" || { echo "lab.sh: vimp signal did not start:" >&2; cat "$LAB_DIR/signal.log" >&2; exit 1; }
fi
if [ "$turn" = 1 ]; then
  for _ in $(seq 200); do ip netns exec rdv ss -Hlun 2>/dev/null | grep -q ':3478' && break; sleep 0.05; done
  # coturn's UDP listener: its log says so when the port is taken (relaying over TCP only).
  if grep -q "Cannot bind" "$LAB_DIR/turn.log" 2>/dev/null; then
    echo "lab.sh: coturn could not bind its listener:" >&2; cat "$LAB_DIR/turn.log" >&2; exit 1
  fi
fi

set +e
"$@"
status=$?
exit "$status"

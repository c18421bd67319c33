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
# (`apt-get install iptables coturn`).
#
# Options:
#   --home NAME:NAT     a home (repeatable); NAT is `cone` (Linux MASQUERADE, port-preserving:
#                       what most home routers do) or `symmetric` (MASQUERADE --random-fully: a
#                       new port for every destination, so only a TURN relay gets through) or
#                       `public` (no router: the player's machine is on the public segment)
#   --line NAME:PROFILE the home's access line through the userspace TUN conditioner: PROFILE is
#                       `DELAY_MS[:JITTER_MS[:LOSS_PERCENT]]`, applied each way (so 50:10:1 adds
#                       about 100 ± 20 ms to a round trip and loses about 2 % of round trips)
#   --uplink NAME:RATE  caps the home's upload with tbf, e.g. `8mbit`
#   --vimp PATH         the vimp binary (default: $CARGO_TARGET_DIR/release/vimp)
#   --netcond PATH      the conditioner (default: beside the vimp binary, `vimp-netcond`)
#   --no-turn           no coturn (STUN from `vimp signal` itself)
#
# COMMAND sees:
#   LAB_SIGNAL      ws://203.0.113.10:3536, the rendezvous
#   LAB_HOMES       the homes' names, space-separated; each has a player machine of that name
#   LAB_DIR         a scratch directory (logs: signal.log, turn.log, netcond-HOME.log)
#   LAB_VIMP        the vimp binary
#
# Addresses: the public segment is 203.0.113.0/24 (TEST-NET-3): the rendezvous at .10, home
# routers at .21, .22, …; home N's LAN is 192.168.N.0/24 (router .1, line .2) and its player
# machine is 10.N.0.10 behind the line.
set -euo pipefail

homes=() lines=() uplinks=() turn=1
vimp="${CARGO_TARGET_DIR:-$HOME/.cache/vimp-target}/release/vimp" netcond=""
while [ $# -gt 0 ]; do
  case "$1" in
    --home) homes+=("$2"); shift 2 ;;
    --line) lines+=("$2"); shift 2 ;;
    --uplink) uplinks+=("$2"); shift 2 ;;
    --vimp) vimp="$2"; shift 2 ;;
    --netcond) netcond="$2"; shift 2 ;;
    --no-turn) turn=0; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "lab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "lab.sh: no COMMAND (see --help)" >&2; exit 2; }
[ ${#homes[@]} -gt 0 ] || { echo "lab.sh: no --home (see --help)" >&2; exit 2; }
vimp="$(realpath "$vimp")"
[ -x "$vimp" ] || { echo "lab.sh: no vimp binary at $vimp (cargo build --release, or --vimp)" >&2; exit 2; }
[ -n "$netcond" ] || netcond="$(dirname "$vimp")/vimp-netcond"
for tool in ip iptables unshare; do
  command -v "$tool" >/dev/null || { echo "lab.sh: needs $tool (apt-get install iproute2 iptables util-linux)" >&2; exit 2; }
done
if [ "$turn" = 1 ] && ! command -v turnserver >/dev/null; then
  echo "lab.sh: needs coturn's turnserver (apt-get install coturn), or --no-turn" >&2; exit 2
fi
[ "$(id -u)" = 0 ] || { echo "lab.sh: needs root (network namespaces, iptables)" >&2; exit 2; }

# Into a private network and mount namespace tree, once.
if [ -z "${LAB_INSIDE:-}" ]; then
  script="$(realpath "$0")"
  args=()
  for h in "${homes[@]}"; do args+=(--home "$h"); done
  for l in "${lines[@]}"; do args+=(--line "$l"); done
  for u in "${uplinks[@]}"; do args+=(--uplink "$u"); done
  [ "$turn" = 1 ] || args+=(--no-turn)
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
ip link set lo up
ip link add wan type bridge
ip addr add 203.0.113.1/24 dev wan
ip link set wan up

# veth NS IFACE ADDR: a namespace NS on the public bridge with address ADDR on IFACE.
on_wan() {
  ip link add "$2-$1" type veth peer name "$2" netns "$1"
  ip link set "$2-$1" master wan up
  ip -n "$1" addr add "$3/24" dev "$2"
  ip -n "$1" link set "$2" up
  ip -n "$1" route add default via 203.0.113.1
}
sysctl_in() { ip netns exec "$1" sysctl -qw "$2"; }

# The rendezvous: vimp signal and coturn. A TURN relay must be able to send anywhere, so the
# public segment has a default route (to this namespace).
ip netns add rdv
ip -n rdv link set lo up
on_wan rdv eth0 203.0.113.10
secret="lab-secret-$RANDOM"
if [ "$turn" = 1 ]; then
  # vimp signal first, without --no-stun, as people start them: it leaves UDP 3478 to the
  # TURN server it hands out (which answers STUN there itself), so coturn still gets it.
  ip netns exec rdv "$vimp" signal --bind 203.0.113.10:3536 \
    --turn turn:203.0.113.10:3478 --turn-secret "$secret" \
    > "$LAB_DIR/signal.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q listening "$LAB_DIR/signal.log" 2>/dev/null && break; sleep 0.05; done
  ip netns exec rdv turnserver -n --listening-ip 203.0.113.10 --relay-ip 203.0.113.10 \
    --listening-port 3478 --min-port 49152 --max-port 65535 --realm vimp.lab \
    --use-auth-secret --static-auth-secret "$secret" --fingerprint --no-cli --no-tls --no-dtls \
    --no-software-attribute --log-file stdout --simple-log --pidfile "$LAB_DIR/turn.pid" \
    > "$LAB_DIR/turn.log" 2>&1 &
else
  ip netns exec rdv "$vimp" signal --bind 203.0.113.10:3536 --stun-bind 203.0.113.10:3478 \
    > "$LAB_DIR/signal.log" 2>&1 &
fi
pids+=($!)

# Homes.
profile_of() { # NAME LIST...: the value after NAME: in LIST, or nothing
  local name="$1"; shift
  for item in "$@"; do [ "${item%%:*}" = "$name" ] && { echo "${item#*:}"; return; }; done
  return 0
}
names=()
n=0
for spec in "${homes[@]}"; do
  n=$((n + 1))
  name="${spec%%:*}" nat="${spec#*:}"
  names+=("$name")
  case "$nat" in cone|symmetric|public) ;; *) echo "lab.sh: NAT $nat? (cone, symmetric, public)" >&2; exit 2 ;; esac
  ip netns add "$name"
  ip -n "$name" link set lo up
  # webrtc's mDNS socket needs a multicast route.
  ip -n "$name" link set lo multicast on
  if [ "$nat" = public ]; then
    on_wan "$name" eth0 "203.0.113.$((20 + n))"
    continue
  fi
  router="$name-router" line="$name-line"
  ip netns add "$router"
  ip netns add "$line"
  ip -n "$router" link set lo up
  ip -n "$line" link set lo up
  on_wan "$router" wan0 "203.0.113.$((20 + n))"
  # router lan0 — line up0; line down0 — player eth0
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
  sysctl_in "$router" net.ipv4.ip_forward=1
  sysctl_in "$line" net.ipv4.ip_forward=1
  # The NAT, and the home firewall: nothing unsolicited gets in, to the LAN or to the router
  # itself (a router that lets such packets reach its own address confirms conntrack entries
  # that steal mapped ports and break hole punching).
  random=()
  [ "$nat" = symmetric ] && random=(--random-fully)
  ip netns exec "$router" iptables -t nat -A POSTROUTING -o wan0 -j MASQUERADE "${random[@]}"
  ip netns exec "$router" iptables -A INPUT -i wan0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  ip netns exec "$router" iptables -A INPUT -i wan0 -j DROP
  ip netns exec "$router" iptables -A FORWARD -i wan0 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  ip netns exec "$router" iptables -A FORWARD -i wan0 -j DROP
  rate="$(profile_of "$name" "${uplinks[@]}")"
  if [ -n "$rate" ]; then
    ip netns exec "$router" tc qdisc add dev wan0 root tbf rate "$rate" burst 32kbit latency 400ms
  fi
  cond="$(profile_of "$name" "${lines[@]}")"
  if [ -n "$cond" ]; then
    [ -x "$netcond" ] || { echo "lab.sh: no conditioner at $netcond (cargo build -p vimp-lab, or --netcond)" >&2; exit 2; }
    # Everything the line forwards goes through tun0 and the conditioner, which writes it back.
    ip netns exec "$line" "$netcond" --tun tun0 --down "10.$n.0.0/24" --profile "$cond" \
      > "$LAB_DIR/netcond-$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do ip -n "$line" link show tun0 >/dev/null 2>&1 && break; sleep 0.05; done
    ip -n "$line" link set tun0 up
    for dev in all default up0 down0 tun0; do sysctl_in "$line" "net.ipv4.conf.$dev.rp_filter=0"; done
    ip -n "$line" route add default dev tun0 table 100
    ip -n "$line" rule add iif up0 lookup 100
    ip -n "$line" rule add iif down0 lookup 100
  fi
done
export LAB_HOMES="${names[*]}" LAB_SIGNAL=ws://203.0.113.10:3536

# Ready when the rendezvous listens.
for _ in $(seq 200); do grep -q listening "$LAB_DIR/signal.log" 2>/dev/null && break; sleep 0.05; done
grep -q listening "$LAB_DIR/signal.log" || { echo "lab.sh: vimp signal did not start:" >&2; cat "$LAB_DIR/signal.log" >&2; exit 1; }
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

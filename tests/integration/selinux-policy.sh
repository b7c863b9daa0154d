#!/bin/sh
# The SELinux policy module, verified statically (the test hosts run without SELinux): install
# the built selinux/cordon.pp into a copy of the distribution's policy store (semodule -p ROOT
# -n: linked and expanded with the base policy and every distribution module, nothing loaded
# into a kernel), then ask the resulting binary policy with sesearch which rules exist and which
# do not, and look up the module's file contexts.
#
# "effective" assertions search with attribute expansion (what the kernel would enforce,
# including rules the base policy gives every domain); "own" assertions look only at rules
# whose source is the cordon type itself (sesearch -ds), i.e. what cordon.te grants.
#
# Skips (1..0) when a tool, the built module or the distribution's policy store is missing;
# with CORDON_MUST_WORK=1 (CI) that is a failure instead.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/integration/tap-lib.sh"
. "$top_srcdir/tests/integration/launcherd-caps-lib.sh"


for tool in sesearch seinfo semodule selabel_lookup; do
	command -v "$tool" >/dev/null 2>&1 ||
		skip_all "$tool not found (Debian: setools, policycoreutils, selinux-utils)"
done
pp="$top_builddir/selinux/cordon.pp"
[ -f "$pp" ] || skip_all "selinux/cordon.pp not built (configure --with-selinux; make)"
policy_type=$(sed -n 's/^SELINUXTYPE=//p' /etc/selinux/config 2>/dev/null)
policy_type=${policy_type:-default}
store="/var/lib/selinux/$policy_type"
[ -r "$store/active/policy.kern" ] ||
	skip_all "no readable policy store $store (Debian: selinux-policy-default; needs root to read)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-selinux.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "1..35"

# --- link the module into a copy of the distribution's policy ------------------------------
mkdir -p "$tmp/root/var/lib/selinux" "$tmp/root/etc/selinux"
cp -a "$store" "$tmp/root/var/lib/selinux/" &&
	cp -a "/etc/selinux/$policy_type" /etc/selinux/config "$tmp/root/etc/selinux/" &&
	{ [ ! -f /etc/selinux/semanage.conf ] || cp /etc/selinux/semanage.conf "$tmp/root/etc/selinux/"; }
semodule -p "$tmp/root" -s "$policy_type" -n -i "$pp" >"$tmp/semodule.log" 2>&1
rc=$?
policy=$(ls "$tmp/root/etc/selinux/$policy_type/policy/policy."* 2>/dev/null | tail -n 1)
[ $rc -eq 0 ] && [ -n "$policy" ] && seinfo "$policy" -t cordon_sandbox_t 2>/dev/null | grep -q 'cordon_sandbox_t'
ok $? "cordon.pp links and expands with the distribution's $policy_type policy (semodule -p)"
[ $rc -eq 0 ] || diag "$(cat "$tmp/semodule.log")"
if [ -z "$policy" ]; then
	# Nothing below can be asked; fail every remaining point rather than stop short of the plan.
	while [ $TAP_N -lt 35 ]; do ok 1 "no binary policy to query"; done
	exit 1
fi

# sesearch, minus noise.
q() {
	sesearch "$@" "$policy" 2>/dev/null | grep -E '^(allow|type_transition|dontaudit|neverallow)'
}
# The target types of the rules q prints (allow A B:C ...; -> B).
targets() {
	q "$@" | awk '{ split($3, a, ":"); print a[1] }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
sources() {
	q "$@" | awk '{ print $2 }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
none() { # description, sesearch arguments: no rule may match
	desc=$1
	shift
	out=$(q "$@")
	[ -z "$out" ]
	ok $? "$desc"
	[ -z "$out" ] || diag "$out"
}
some() { # description, sesearch arguments: a rule must match
	desc=$1
	shift
	out=$(q "$@")
	[ -n "$out" ]
	ok $? "$desc"
}
is_set() { # description, expected, actual (space-separated words, compared sorted)
	e=$(printf '%s\n' $2 | sort -u | tr '\n' ' ')
	a=$(printf '%s\n' $3 | sort -u | tr '\n' ' ')
	[ "$e" = "$a" ]
	ok $? "$1"
	[ "$e" = "$a" ] || diag "expected: $e" "     got: $a"
}
has_type() {
	seinfo "$policy" -t "$1" 2>/dev/null | grep -qw "$1"
}

types="cordon_launcherd_t cordon_launcherd_exec_t cordon_controller_t cordon_controller_exec_t
	cordon_sandbox_t cordon_workspace_t cordon_conf_t cordon_runtime_t cordon_controller_home_t
	cordon_controller_runtime_t cordon_sandbox_tmpfs_t"
missing=""
for t in $types; do has_type "$t" || missing="$missing $t"; done
[ -z "$missing" ]
ok $? "the module's types exist in the linked policy"
[ -z "$missing" ] || diag "missing:$missing"

# --- cordon_launcherd_t ----------------------------------------------------------------------
some "systemd (init_t) runs cordon-launcherd in cordon_launcherd_t" \
	-T -s init_t -t cordon_launcherd_exec_t -c process -D cordon_launcherd_t

expected=$(launcherd_caps | cap_lower)
got=$(q -A -s cordon_launcherd_t -ds -c capability,capability2,cap_userns,cap2_userns |
	sed 's/.*:cap[a-z0-9_]* //; s/[{};]//g; s/\[.*//')
is_set "cordon_launcherd_t's capabilities are exactly launcherd-main.c's needed_caps[] + optional_caps[]" \
	"$expected" "$got"
none "cordon_launcherd_t has no user-namespace capabilities" \
	-A -s cordon_launcherd_t -c cap_userns,cap2_userns

some "exec of a payload by launcherd transitions to cordon_sandbox_t (type_transition at exec)" \
	-T -s cordon_launcherd_t -t bin_t -c process -D cordon_sandbox_t
some "launcherd may perform that transition (process transition)" \
	-A -s cordon_launcherd_t -t cordon_sandbox_t -c process -p transition
some "...with no_new_privs set (process2 nnp_transition: launcherd sets it, NoNewPrivileges=yes)" \
	-A -s cordon_launcherd_t -t cordon_sandbox_t -c process2 -p nnp_transition
some "cordon_sandbox_t may be entered from a payload's executable (file entrypoint)" \
	-A -s cordon_sandbox_t -t bin_t -c file -p entrypoint
is_set "launcherd transitions to no domain but cordon_sandbox_t" \
	"cordon_sandbox_t" "$(targets -A -s cordon_launcherd_t -ds -c process -p transition,dyntransition)"
none "launcherd has no execmem, execstack or execheap" \
	-A -s cordon_launcherd_t -c process -p execmem,execstack,execheap
none "launcherd cannot open, read or write shadow_t" \
	-A -s cordon_launcherd_t -t shadow_t -c file -p open,read,write,append
some "launcherd can mount tmpfs (the sandbox root) and proc" \
	-A -s cordon_launcherd_t -t tmpfs_t -c filesystem -p mount
some "launcherd can create sandbox cgroups" \
	-A -s cordon_launcherd_t -t cgroup_t -c dir -p create

# --- the launcher socket -----------------------------------------------------------------------
some "cordon_controller_t can connect to launcherd (unix_stream_socket connectto)" \
	-A -s cordon_controller_t -t cordon_launcherd_t -c unix_stream_socket -p connectto
bad=""
for d in cordon_sandbox_t user_t staff_t; do
	has_type "$d" || continue
	[ -z "$(q -A -s "$d" -t cordon_launcherd_t -c unix_stream_socket -p connectto)" ] || bad="$bad $d"
done
[ -z "$bad" ]
ok $? "the sandbox and confined user domains (user_t, staff_t) cannot connect to launcherd"
[ -z "$bad" ] || diag "can connect:$bad"
some "a user domain (user_t) running cordon-controller enters cordon_controller_t" \
	-T -s user_t -t cordon_controller_exec_t -c process -D cordon_controller_t
none "cordon_controller_t cannot open, read or write shadow_t" \
	-A -s cordon_controller_t -t shadow_t -c file -p open,read,write,append

# --- cordon_sandbox_t --------------------------------------------------------------------------
none "cordon_sandbox_t has no access at all to shadow_t (effective)" \
	-A -s cordon_sandbox_t -t shadow_t
none "cordon_sandbox_t cannot write shadow_t (effective)" \
	-A -s cordon_sandbox_t -t shadow_t -c file -p write,append,create,setattr
is_set "cordon_sandbox_t's own rules connect (connectto) only to its own sockets" \
	"cordon_sandbox_t" "$(targets -A -s cordon_sandbox_t -ds -p connectto)"
# The base policy lets every domain reach mcstrans (setrans_t) for MCS label translation;
# anything beyond that would be a hole.
eff=$(targets -A -s cordon_sandbox_t -p connectto)
is_set "cordon_sandbox_t connects to no other domain's socket (effective: itself, base's setrans_t)" \
	"cordon_sandbox_t setrans_t" "$eff"
is_set "cordon_sandbox_t sends datagrams (sendto) only to itself (effective)" \
	"cordon_sandbox_t" "$(targets -A -s cordon_sandbox_t -p sendto)"
none "cordon_sandbox_t cannot ptrace (effective)" \
	-A -s cordon_sandbox_t -c process -p ptrace
none "cordon_sandbox_t has no execmem, execstack or execheap (effective)" \
	-A -s cordon_sandbox_t -c process -p execmem,execstack,execheap
none "cordon.te grants cordon_sandbox_t no execmod" \
	-A -s cordon_sandbox_t -ds -p execmod
is_set "execmod reaches cordon_sandbox_t only through the base rule for every domain (textrel_shlib_t)" \
	"textrel_shlib_t" "$(targets -A -s cordon_sandbox_t -p execmod)"
none "cordon_sandbox_t has no capabilities (effective)" \
	-A -s cordon_sandbox_t -c capability,capability2,cap_userns,cap2_userns
none "cordon_sandbox_t cannot leave its domain (transition, dyntransition, setexec, setcurrent)" \
	-A -s cordon_sandbox_t -c process -p transition,dyntransition,setexec,setcurrent
is_set "cordon_sandbox_t's only outbound network is TCP to unreserved ports (the proxy listener)" \
	"unreserved_port_t" "$(targets -A -s cordon_sandbox_t -p name_connect)"
none "cordon_sandbox_t has no raw, packet, UDP, ICMP, SCTP or non-route netlink sockets" \
	-A -s cordon_sandbox_t -ds -c rawip_socket,packet_socket,udp_socket,icmp_socket,sctp_socket,netlink_socket,netlink_audit_socket,netlink_kobject_uevent_socket,netlink_xfrm_socket,netlink_firewall_socket,netlink_ip6fw_socket,netlink_tcpdiag_socket,netlink_nflog_socket,netlink_selinux_socket,netlink_connector_socket,netlink_netfilter_socket,netlink_generic_socket,netlink_crypto_socket,key_socket,appletalk_socket,bluetooth_socket,alg_socket,vsock_socket,xdp_socket
home=""
for t in user_home_t user_home_dir_t ssh_home_t gpg_secret_t home_root_t user_tmp_t; do
	has_type "$t" || continue
	home="$home$(q -A -s cordon_sandbox_t -t "$t" -c file,dir,lnk_file,sock_file,fifo_file)"
done
[ -z "$home" ]
ok $? "cordon_sandbox_t has no access to user home types (user_home_t, user_home_dir_t, ssh_home_t, gpg_secret_t, home_root_t, user_tmp_t)"
[ -z "$home" ] || diag "$home"
some "...but reads, writes and runs the workspace label (cordon_workspace_t)" \
	-A -s cordon_sandbox_t -t cordon_workspace_t -c file -p write,execute

# --- file contexts ------------------------------------------------------------------------------
fc="$tmp/root/etc/selinux/$policy_type/contexts/files/file_contexts"
bad=""
lookup() { # path, mode (octal file type), expected type
	got=$(selabel_lookup -b file -f "$fc" -k "$1" -t "$2" 2>/dev/null | sed -n 's/.*:object_r:\([^:]*\):.*/\1/p')
	[ "$got" = "$3" ] || bad="$bad
$1: $got (expected $3)"
}
reg=32768 # S_IFREG
sock=49152 # S_IFSOCK
dir=16384 # S_IFDIR
lookup /usr/libexec/cordon-launcherd $reg cordon_launcherd_exec_t
lookup /usr/local/libexec/cordon-launcherd $reg cordon_launcherd_exec_t
lookup /usr/libexec/cordon-controller $reg cordon_controller_exec_t
lookup /usr/local/libexec/cordon-controller $reg cordon_controller_exec_t
lookup /etc/cordon/launcherd.json $reg cordon_conf_t
lookup /run/cordon $dir cordon_runtime_t
lookup /run/cordon/launcherd.sock $sock cordon_runtime_t
[ -z "$bad" ]
ok $? "file contexts: binaries, /etc/cordon, /run/cordon and the launcher socket"
[ -z "$bad" ] || diag "$bad"
bad=""
fch="$fc.homedirs"
[ -f "$fch" ] || fch=$fc
home_fc=$(grep -h 'cordon' "$fch" "$fc" 2>/dev/null)
echo "$home_fc" | grep -q '/\\.local/state/cordon(/\.\*)?.*cordon_controller_home_t' &&
	echo "$home_fc" | grep -q '^/run/user/.*/cordon(/\.\*)?.*cordon_controller_runtime_t'
ok $? "file contexts: ~/.local/state/cordon (state) and \$XDG_RUNTIME_DIR/cordon (client socket)"

# Failures are the not-ok lines; the exit status stays 0 so the driver does not count them twice.
exit 0

# Sourced by systemd-units.sh and selinux-policy.sh (POSIX sh): the capabilities cordon-launcherd
# needs, read from its one source, the needed_caps[] and optional_caps[] tables in
# launcherd/launcherd-main.c. CapabilityBoundingSet= in cordon-launcherd.service and the
# capability rules of cordon_launcherd_t in selinux/cordon.te are compared with this list.

launcherd_main_c="${top_srcdir:?}/launcherd/launcherd-main.c"

# The entries of one `static const cap_value_t NAME[] = { ... };` table, one CAP_X per line.
_launcherd_cap_table() {
	awk -v name="$1" '
		index($0, "cap_value_t " name "[]") { on = 1 }
		on { print }
		on && /};/ { exit }
	' "$launcherd_main_c" | grep -oE 'CAP_[A-Z_]+' | sort -u
}

# needed_caps[] + optional_caps[], as CAP_X, sorted.
launcherd_caps() {
	{
		_launcherd_cap_table needed_caps
		_launcherd_cap_table optional_caps
	} | sort -u
}

launcherd_needed_caps() {
	_launcherd_cap_table needed_caps
}

# Every capability constant named anywhere in launcherd's sources (the libcap flag and value
# names CAP_EFFECTIVE, CAP_PERMITTED, CAP_INHERITABLE, CAP_SET, CAP_CLEAR are not capabilities).
launcherd_caps_referenced() {
	cat "${top_srcdir:?}"/launcherd/*.c "${top_srcdir:?}"/launcherd/*.h |
		grep -oE '\bCAP_[A-Z_]+\b' |
		grep -vxE 'CAP_(EFFECTIVE|PERMITTED|INHERITABLE|SET|CLEAR)' | sort -u
}

# "CAP_SYS_ADMIN" -> "sys_admin" (SELinux permission and setpriv spelling).
cap_lower() {
	sed 's/^CAP_//' | tr 'A-Z' 'a-z'
}

#!/bin/sh
# The install layout: `make install DESTDIR=...` from the build tree, into a fresh
# staging directory, installs exactly the expected files with the expected modes: the binaries
# in bindir/libexecdir (0755), the default admin floor in sysconfdir/cordon (0644, parses, only
# keys launcherd knows), the man pages, the units and the SELinux module where this
# configuration builds them. Nothing setuid or setgid, nothing world-writable, no file
# capabilities unless configured --with-file-caps (then exactly launcherd's needed_caps[], on
# launcherd only). As root, the same staged install also works as an
# unprivileged user. `make uninstall` removes every file again.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/integration/tap-lib.sh"


command -v make >/dev/null 2>&1 || skip_all "make not found"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found"
getcap=$(command -v getcap || echo /usr/sbin/getcap)
[ -x "$getcap" ] || skip_all "getcap not found (Debian: libcap2-bin)"
for b in cordon cordon-controller cordon-launcherd; do
	[ -x "$top_builddir/$b" ] || skip_all "$b not built (make)"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-install.XXXXXX") || exit 1
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM
# A make of our own: not the jobs, variables (TESTS=...) or level of the make check running us.
submake() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES make --no-print-directory "$@"
}
. "$top_srcdir/tests/integration/launcherd-caps-lib.sh"

echo "1..12"

submake -s -C "$top_builddir" print-install-dirs >"$tmp/dirs" 2>"$tmp/dirs.err"
rc=$?
# A directory that is not absolute would install outside DESTDIR (e.g. a configure argument
# whose "$var" was quoted so that the shell never expanded it).
relative=$(grep -v '^file_caps=' "$tmp/dirs" | grep -v '^[a-z]*=/')
[ $rc -eq 0 ] && [ -z "$relative" ]
ok $? "make print-install-dirs: every install directory is absolute"
[ -z "$relative" ] || diag "not absolute: $relative"
while IFS='=' read -r k v; do
	case $k in
	bindir | libexecdir | sysconfdir | mandir | docdir | pkgdatadir | systemdsystemunitdir | \
		systemduserunitdir | sysusersdir | selinuxpackagedir | file_caps)
		eval "$k=\$v" ;;
	esac
done <"$tmp/dirs"
: "${bindir:?}" "${libexecdir:?}" "${sysconfdir:?}" "${mandir:?}" "${docdir:?}" "${file_caps:?}"
: "${pkgdatadir:?}"

dest="$tmp/root"
submake -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1
rc=$?
ok $rc "make install DESTDIR=<fresh directory>"
[ $rc -eq 0 ] || diag "$(tail -n 20 "$tmp/install.log")"

launcherd_mode=0755
[ "$file_caps" = yes ] && launcherd_mode=0750
{
	echo "0755 $bindir/cordon"
	echo "0755 $libexecdir/cordon-controller"
	echo "$launcherd_mode $libexecdir/cordon-launcherd"
	echo "0644 $sysconfdir/cordon/launcherd.json"
	echo "0644 $mandir/man1/cordon.1"
	echo "0644 $mandir/man5/cordon-policy.5"
	echo "0644 $mandir/man5/cordon-launcherd.json.5"
	echo "0644 $mandir/man8/cordon-controller.8"
	echo "0644 $mandir/man8/cordon-launcherd.8"
	echo "0644 $docdir/README.md"
	# builtin:vm's helper fetcher and the scripts that fetch its kernel and build its initramfs.
	echo "0755 $libexecdir/cordon-vm-helpers"
	echo "0755 $pkgdatadir/vm/fetch-kernel.sh"
	echo "0755 $pkgdatadir/vm/mkinitramfs.sh"
	# The packs shipped in this tree, each a directory `cordon pack install` takes.
	echo "0755 $pkgdatadir/packs/docker/cordon-docker-pack"
	echo "0644 $pkgdatadir/packs/docker/pack.json"
	echo "0755 $pkgdatadir/packs/e2b/cordon-e2b-pack"
	echo "0644 $pkgdatadir/packs/e2b/pack.json"
	echo "0755 $pkgdatadir/packs/daytona/cordon-daytona-pack"
	echo "0644 $pkgdatadir/packs/daytona/pack.json"
	echo "0755 $pkgdatadir/packs/modal/cordon-modal-pack"
	echo "0644 $pkgdatadir/packs/modal/pack.json"
	if [ -n "${systemdsystemunitdir:-}" ]; then
		echo "0644 $systemdsystemunitdir/cordon-launcherd.service"
		echo "0644 $systemdsystemunitdir/cordon-launcherd.socket"
	fi
	[ -z "${systemduserunitdir:-}" ] || echo "0644 $systemduserunitdir/cordon-controller.service"
	[ -z "${sysusersdir:-}" ] || echo "0644 $sysusersdir/cordon.conf"
	[ -z "${selinuxpackagedir:-}" ] || echo "0644 $selinuxpackagedir/cordon.pp"
} | sort -k2 >"$tmp/expected"
(cd "$dest" && find . \( -type f -o -type l \) -printf '%#m /%P\n') | sed 's/^0*\([0-7]\{3\}\) /0\1 /' |
	sort -k2 >"$tmp/got"
cmp -s "$tmp/expected" "$tmp/got"
ok $? "exactly the expected files, with the expected modes ($(wc -l <"$tmp/expected" | tr -d ' ') files)"
cmp -s "$tmp/expected" "$tmp/got" || diag "$(diff -u "$tmp/expected" "$tmp/got" | tail -n +3)"

found=$(find "$dest" -perm /6000)
[ -z "$found" ]
ok $? "no setuid or setgid bit anywhere (find -perm /6000)"
[ -z "$found" ] || diag "$found"

found=$(find "$dest" -perm -0002 ! -type l)
[ -z "$found" ]
ok $? "nothing world-writable"
[ -z "$found" ] || diag "$found"

caps=$("$getcap" -r "$dest" 2>/dev/null)
if [ "$file_caps" = yes ]; then
	want=$(launcherd_needed_caps | cap_lower | sed 's/^/cap_/' | paste -sd, -)
	got=$(echo "$caps" | sed -n "s|^$dest$libexecdir/cordon-launcherd[ =]*||p" | sed 's/[+=]ep$//')
	[ "$(echo "$caps" | wc -l)" -eq 1 ] &&
		[ "$(echo "$got" | tr ',' '\n' | sort)" = "$(echo "$want" | tr ',' '\n' | sort)" ]
	ok $? "--with-file-caps: only cordon-launcherd has file capabilities, exactly $want"
else
	[ -z "$caps" ]
	ok $? "no file capabilities anywhere (getcap -r; configured without --with-file-caps)"
fi
[ -z "$caps" ] || diag "$caps"

# The capability list the install hook would use is launcherd's, whatever the configuration.
hook=$(submake -s -C "$top_builddir" print-launcherd-file-caps 2>/dev/null)
[ -n "$hook" ] && [ "$hook" = "$(launcherd_needed_caps | cap_lower | sed 's/^/cap_/' | paste -sd, -)" ]
ok $? "the --with-file-caps hook's list is launcherd-main.c's needed_caps[] ($hook)"

floor="$dest$sysconfdir/cordon/launcherd.json"
python3 - "$floor" "$top_srcdir/launcherd/launcherd-floor.c" <<'PY'
import json, re, sys
f = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read()
known = set(re.findall(r'"([A-Za-z]+)"', src.split("static int parse_floor", 1)[1].split("{", 1)[1].split("};", 1)[0]))
sys.exit(0 if isinstance(f, dict) and set(f) <= known else 1)
PY
ok $? "the installed floor parses, with only the keys launcherd-floor.c accepts"

# An administrator's floor survives a reinstall and an uninstall.
echo '{"maxNetwork": "none"}' >"$floor"
submake -C "$top_builddir" install-data DESTDIR="$dest" >"$tmp/reinstall.log" 2>&1 &&
	grep -q '"none"' "$floor"
ok $? "make install keeps an existing (administrator's) launcherd.json"

submake -C "$top_builddir" uninstall DESTDIR="$dest" >"$tmp/uninstall.log" 2>&1
rc=$?
left=$(cd "$dest" && find . -type f | sort)
[ $rc -eq 0 ] && [ "$left" = "./${sysconfdir#/}/cordon/launcherd.json" ]
ok $? "make uninstall removes every file but the modified floor"
[ $rc -eq 0 ] || diag "$(tail -n 10 "$tmp/uninstall.log")"
[ "$left" = "./${sysconfdir#/}/cordon/launcherd.json" ] || diag "left: $left"

# No step of a staged install needs root (unless --with-file-caps, which is documented to).
# (Not applicable is a plain skip; a missing tool is a failure under CORDON_MUST_WORK=1.)
if [ "$file_caps" = yes ]; then
	na "configured --with-file-caps: a staged install runs setcap, which needs CAP_SETFCAP"
	na "(idem)"
elif [ "$(id -u)" != 0 ]; then
	na "not root: the staged install above already ran unprivileged"
	na "(idem)"
elif ! command -v setpriv >/dev/null 2>&1; then
	skip "setpriv not found (util-linux)"
	skip "(idem)"
else
	mkdir "$tmp/user" && chown 65534:65534 "$tmp/user"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
		make --no-print-directory -C "$top_builddir" install DESTDIR="$tmp/user/root" \
		>"$tmp/user.log" 2>&1
	rc=$?
	ok $rc "make install DESTDIR=... as an unprivileged user (uid 65534)"
	[ $rc -eq 0 ] || diag "$(tail -n 10 "$tmp/user.log")"
	(cd "$tmp/user/root" && find . \( -type f -o -type l \) -printf '%#m /%P\n') |
		sed 's/^0*\([0-7]\{3\}\) /0\1 /' | sort -k2 >"$tmp/got-user"
	cmp -s "$tmp/expected" "$tmp/got-user"
	ok $? "the unprivileged staged install has the same files and modes"
fi

done_testing

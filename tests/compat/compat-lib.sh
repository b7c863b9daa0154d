# shellcheck shell=bash
# The compatibility suite's two sandboxes (sourced after tests/integration/cli-lib.sh, which
# gives the private controller and TEST_TMP): compat_cordon runs a command in cordon's default
# sandbox, compat_bwrap in a bubblewrap sandbox as strict as that default, both with the same
# work directory as the current directory, the same environment and the same limits:
#
#   cordon run -- CMD          the default policy: the work directory read-write as the
#                              workspace, system directories read-only, a private 256 MiB /tmp,
#                              an empty read-only $HOME, network mode none, 1024 open files, no
#                              core dumps, no capabilities, its own pid/ipc/net/uts namespaces
#   bwrap --unshare-all …      user, pid, ipc, net, uts and cgroup namespaces, no capabilities,
#                              a new session, the same mounts (a read-only root, /usr and /etc
#                              read-only, the merged-/usr symlinks, a fresh /proc and /dev, a
#                              64 MiB /dev/shm, a 256 MiB /tmp, an empty read-only $HOME, the
#                              work directory read-write), the same environment and rlimits
#
# The environment both get: PATH=/usr/local/bin:/usr/bin:/bin, LANG=C.UTF-8 and HOME (cordon
# sets HOME itself); nothing else (cordon passes PATH, LANG, LC_ALL, TERM and TZ from the
# caller, so the CLI runs with exactly those).

COMPAT_PATH=/usr/local/bin:/usr/bin:/bin
COMPAT_HOME=${HOME:-/root}

# compat_cordon WORKDIR CMD…: run CMD in cordon's default sandbox, WORKDIR its workspace.
# $COMPAT_CORDON_NET, when set, is passed as --net (to try another network mode by hand; the
# suite itself runs the default).
compat_cordon() {
	local work=$1
	shift
	(cd "$work" && exec env -u TERM -u LC_ALL -u TZ PATH="$COMPAT_PATH" LANG=C.UTF-8 \
		"$CORDON" run ${COMPAT_CORDON_NET:+--net "$COMPAT_CORDON_NET"} -- "$@")
}

# compat_bwrap WORKDIR CMD…: run CMD under bwrap, as strictly confined as cordon's default.
compat_bwrap() {
	local work=$1 d t
	shift
	local -a args=(--unshare-all --unshare-user --die-with-parent --new-session --cap-drop ALL
		--ro-bind /usr /usr --ro-bind /etc /etc)
	for d in /bin /sbin /lib /lib32 /lib64 /libx32; do
		if [ -L "$d" ]; then
			t=$(readlink "$d")
			args+=(--symlink "$t" "$d")
		elif [ -d "$d" ]; then
			args+=(--ro-bind "$d" "$d")
		fi
	done
	args+=(--proc /proc --dev /dev --size 67108864 --tmpfs /dev/shm
		--size 268435456 --tmpfs /tmp
		--perms 0755 --tmpfs "$COMPAT_HOME" --remount-ro "$COMPAT_HOME"
		--bind "$work" "$work" --chdir "$work" --remount-ro /
		--clearenv --setenv PATH "$COMPAT_PATH" --setenv LANG C.UTF-8
		--setenv HOME "$COMPAT_HOME")
	(ulimit -n 1024 -c 0 && exec bwrap "${args[@]}" -- "$@")
}

# What a sandbox looks like from inside, one fact a line: compared between the two sides so
# that a difference in the set-up (not in the enforcement) shows before any result does.
# shellcheck disable=SC2034 # used by the test that sources this
COMPAT_PROBE='import os, resource
print("uid", os.getuid(), os.geteuid(), "gid", os.getgid(), os.getegid())
print("cwd", os.getcwd())
for k in sorted(os.environ):
    if k != "PWD":
        print("env", k, os.environ[k])
print("nofile", resource.getrlimit(resource.RLIMIT_NOFILE))
print("core", resource.getrlimit(resource.RLIMIT_CORE))
for l in open("/proc/self/status"):
    if l.startswith(("CapEff", "CapBnd")):
        print(l.split()[0], l.split()[1])
for p in ("/tmp", "/dev/shm", os.environ.get("HOME", "/"), os.getcwd(), "/usr", "/etc", "/"):
    print("writable", p, os.access(p, os.W_OK))
print("netdevs", sorted(l.split(":")[0].strip() for l in list(open("/proc/self/net/dev"))[2:]))
'

# compat_begin WORK_BWRAP WORK_CORDON N: make both work directories, plan 3 + N tests and run the
# first three: both sandboxes start, and look the same from inside (same uid, environment,
# limits, capabilities and writable places, each its own loopback): a difference there is the
# harness's fault, not a compatibility finding. A bwrap that cannot make its sandbox here (no
# user namespaces) is a skip (a failure under CORDON_MUST_WORK=1).
compat_begin() {
	local work_b=$1 work_c=$2 n=$3 probe_b probe_c
	mkdir -p "$work_b" "$work_c"
	probe_b=$(compat_bwrap "$work_b" /usr/bin/python3 -c "$COMPAT_PROBE" 2>&1) ||
		{ diag "$probe_b"; skip_all "bwrap cannot make its sandbox here"; }
	plan $((3 + n))
	ok 0 "a bwrap sandbox starts"
	probe_c=$(compat_cordon "$work_c" /usr/bin/python3 -c "$COMPAT_PROBE" 2>&1)
	ok $? "a cordon default sandbox starts" || diag "$probe_c"
	diag "inside bwrap:" "$probe_b"
	# the work directories differ by name only
	is "${probe_b//"$work_b"/WORK}" "${probe_c//"$work_c"/WORK}" \
		"both sandboxes look the same from inside (uid, environment, rlimits, caps, writable dirs, netdevs)"
}

# compat_results NAME: the directory where a run's outputs are kept for a look afterwards (the
# build directory's tests/compat/NAME.results, emptied first; make clean removes it), else (not
# ours to write: another user's build) one in TEST_TMP.
compat_results() {
	# shellcheck disable=SC2154 # make check sets it (cli-lib.sh insists)
	local d="$top_builddir/tests/compat/$1.results"
	if ! { rm -rf "$d" && mkdir -p "$d"; } 2>/dev/null; then
		d="$TEST_TMP/results"
		mkdir -p "$d"
	fi
	echo "$d"
}

# compat_report RESULT NAME [MORE]: the TAP test for one module or program from
# junit-compare.py's RESULT, MORE appended to its description; below it the causes of its
# regressions (most frequent first) and the regressing cases (the first 40), then the flaky
# cases and the notes. Returns non-zero when it failed.
compat_report() {
	local result=$1 m=$2 more=${3:-} n rp sp rf sf reg nreg st
	IFS=$'\t' read -r _ _ n rp sp rf sf < <(echo "$result" | awk -F'\t' -v m="$m" \
		'$1 == "module" && $2 == m')
	n=${n:-0} rp=${rp:-0} sp=${sp:-0} rf=${rf:-0} sf=${sf:-0}
	reg=$(echo "$result" | awk -F'\t' -v m="$m" '$1 == "regression" && $2 == m')
	nreg=$(echo -n "$reg" | grep -c .)
	# one no case of which passes under bwrap compares nothing: that is a failure too
	[ "$nreg" -eq 0 ] && [ "$rp" -gt 0 ]
	ok $? "$m: no case passes under bwrap and fails under cordon (of $n cases: bwrap passed $rp, failed $rf; cordon passed $sp, failed $sf; $nreg regressions$more)"
	st=$?
	[ "$rp" -gt 0 ] || diag "  no case of $m passed under bwrap"
	if [ "$nreg" -gt 0 ]; then
		echo "$reg" | awk -F'\t' 'NF { print $5 }' | sort | uniq -c | sort -rn |
			sed 's/^ *\([0-9]*\) /#   cause (\1 cases): /'
		echo "$reg" | awk -F'\t' 'NF && ++k <= 40 {
			printf "#   REGRESSION %s (cordon: %s) %s\n", $3, $4, substr($5, 1, 120) }'
		[ "$nreg" -le 40 ] || diag "  … and $((nreg - 40)) more (result.tsv)"
	fi
	echo "$result" | awk -F'\t' -v m="$m" '$1 == "flaky" && $2 == m {
		printf "#   flaky (not counted) %s (%s) %s\n", $3, $4, substr($5, 1, 120) }'
	echo "$result" | awk -F'\t' -v m="$m" '$1 == "both-failed" && $2 == m {
		printf "#   note: fails under both %s: %s\n", $3, substr($4, 1, 120) }'
	echo "$result" | awk -F'\t' -v m="$m" '$1 == "subject-only-passed" && $2 == m {
		printf "#   note: passes under cordon only %s (bwrap: %s)\n", $3, $4 }'
	return $st
}

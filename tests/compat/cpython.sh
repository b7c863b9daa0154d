#!/usr/bin/env bash
# Compatibility: CPython's own regression tests (Debian's libpython3.11-testsuite, run by
# Debian's /usr/bin/python3) inside cordon's default sandbox and inside an equally strict
# bubblewrap sandbox (tests/compat/compat-lib.sh), compared case by case. A case that passes
# under bwrap and does not pass under cordon (fails, errs, is skipped or never ran) is a
# failure, named in the output with the error it got; it is run again alone on both sides first,
# and one that then passes under cordon or fails under bwrap is reported as flaky, not failed.
# Cases that fail under both are listed as notes. The modules cover sockets (TCP/UDP on the
# sandbox's own loopback, AF_UNIX), subprocesses, signals, ptys, file locking, mmap, threads,
# temp files, select/poll/epoll, EINTR handling, asyncio and os. tests/compat/README.md says how
# to read a failure.
#
# Slow (about 100 s a side): skipped under CORDON_SKIP_SLOW=1. A missing bwrap, Python or
# test package is a skip, a failure under CORDON_MUST_WORK=1. COMPAT_MODULES (space-separated)
# replaces the module list, for a quick look at one module.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "$top_srcdir/tests/compat/compat-lib.sh"

if [ -n "${CORDON_SKIP_SLOW:-}" ]; then
	echo "1..0 # SKIP slow: run in the other build"
	exit 0
fi

PY=/usr/bin/python3
PYVER=3.11
COMPARE="$PY $top_srcdir/tests/compat/junit-compare.py"
MODULES=${COMPAT_MODULES:-test_socket test_socketserver test_selectors test_select test_epoll
test_subprocess test_signal test_threadsignals test_eintr test_file_eintr test_pty
test_fcntl test_mailbox test_mmap test_threading test_tempfile test_os test_posix test_fileio
test_shutil test_resource test_time test_pwd test_grp test_httpservers test_urllib2_localnet
test_asyncio.test_events test_asyncio.test_subprocess test_asyncio.test_unix_events
test_multiprocessing_forkserver}
# A VSOCK test talks to the hypervisor (VSOCK is not network-namespaced; on a host without
# one it skips); test_siginterrupt_off waits 30 s for nothing.
IGNORE=('*VSOCK*' '*test_siginterrupt_off')
# -u network: test_socketserver (loopback only) needs the resource; the internet tests it
# enables skip on both sides (no network in either).
# --timeout: a module still running after 3 minutes (the slowest take 40 s here) is stuck; its
# worker is killed and the module reported as timed out.
REGRTEST=(-m test --timeout 180 -u network -j2)
for p in "${IGNORE[@]}"; do REGRTEST+=(-i "$p"); done
# test_multiprocessing_forkserver whole takes minutes: these of its classes (processes, not
# threads or managers), in a regrtest run of their own (-m filters every module of a run):
# queues, locks, semaphores, events and conditions across processes (POSIX semaphores in
# /dev/shm), connections (pipes and AF_UNIX sockets, fd passing), shared memory, pools.
MP=test_multiprocessing_forkserver
MP_MATCH=()
for c in Queue Lock Semaphore Event Condition Connection SharedMemory Pool.; do
	MP_MATCH+=(-m "*WithProcessesTest$c*")
done

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v bwrap >/dev/null || skip_all "bwrap missing (bubblewrap)"
[ -x "$PY" ] || skip_all "$PY missing (python3)"
[ -f "/usr/lib/python$PYVER/test/test_socket.py" ] ||
	skip_all "CPython's tests missing (libpython$PYVER-testsuite)"
[ "$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "$PYVER" ] ||
	skip_all "$PY is not Python $PYVER"

read -r -d '' -a MODS <<<"$MODULES" || true
main_mods=() # all but $MP
for m in "${MODS[@]}"; do [ "$m" = "$MP" ] || main_mods+=("$m"); done

work_b="$TEST_TMP/bwrap-work"
work_c="$TEST_TMP/cordon-work"
# 1-3. both sandboxes start and look the same from inside
compat_begin "$work_b" "$work_c" "${#MODS[@]}"

# regrtest MODE WORK XML [ARGS…]: the modules under one sandbox; its output in WORK/../MODE.log
regrtest() {
	local mode=$1 work=$2 xml=$3 log
	shift 3
	log="$TEST_TMP/$(basename "$xml" .xml).log"
	"compat_$mode" "$work" timeout -k 10 1200 "$PY" "${REGRTEST[@]}" --junit-xml "$xml" "$@" \
		>"$log" 2>&1
	echo "$mode: regrtest exit $?, $(grep -a 'Tests result' "$log" | tail -n1)" >&2
}

# 3+. Each module under bwrap, then under cordon (one after the other: these tests measure
# time, and two runs at once on a small machine make them flaky).
# side MODE WORK NAME: the modules under one sandbox, reports WORK/NAME.xml (and NAME-mp.xml)
side() {
	[ ${#main_mods[@]} -eq 0 ] || regrtest "$1" "$2" "$2/$3.xml" "${main_mods[@]}"
	[ ${#main_mods[@]} -eq ${#MODS[@]} ] || regrtest "$1" "$2" "$2/$3-mp.xml" "${MP_MATCH[@]}" "$MP"
}
t0=$(date +%s)
side bwrap "$work_b" ref 2>&1 | sed 's/^/# /'
t1=$(date +%s)
side cordon "$work_c" subj 2>&1 | sed 's/^/# /'
t2=$(date +%s)
diag "wall time: bwrap $((t1 - t0)) s, cordon $((t2 - t1)) s"

mods=$(IFS=,; echo "${MODS[*]}")
refs="$work_b/ref.xml,$work_b/ref-mp.xml"
subjs="$work_c/subj.xml,$work_c/subj-mp.xml"
result=$(COMPAT_RERUN_LIST="$TEST_TMP/rerun.txt" $COMPARE "$mods" "$refs" "$subjs")
nrerun=$(grep -c . "$TEST_TMP/rerun.txt" 2>/dev/null)
# (hundreds of regressions are no flake: not run again)
[ "${nrerun:-0}" -le 100 ] || diag "$nrerun regressions: not run again"
if [ "${nrerun:-0}" -gt 0 ] && [ "$nrerun" -le 100 ]; then
	# the regressions once more, on both sides, one module at a time (-j1)
	cp "$TEST_TMP/rerun.txt" "$work_b/rerun.txt"
	cp "$TEST_TMP/rerun.txt" "$work_c/rerun.txt"
	rmods=$(echo "$result" | awk -F'\t' '$1 == "regression" { print $2 }' | sort -u)
	REGRTEST=("${REGRTEST[@]/-j2/-j1}")
	# shellcheck disable=SC2086 # a word list
	regrtest bwrap "$work_b" "$work_b/ref-rerun.xml" --matchfile "$work_b/rerun.txt" $rmods \
		2>&1 | sed 's/^/# rerun /'
	# shellcheck disable=SC2086
	regrtest cordon "$work_c" "$work_c/subj-rerun.xml" --matchfile "$work_c/rerun.txt" $rmods \
		2>&1 | sed 's/^/# rerun /'
	result=$($COMPARE "$mods" "$refs" "$subjs" "$work_b/ref-rerun.xml" "$work_c/subj-rerun.xml")
fi

RESULTS=$(compat_results cpython)
cp "$TEST_TMP"/*.log "$work_b"/*.xml "$work_c"/*.xml "$RESULTS"/ 2>/dev/null
echo "$result" >"$RESULTS/result.tsv"

for m in "${MODS[@]}"; do
	compat_report "$result" "$m"
	# a module that did not finish: regrtest's word on it, and the exception it ended with
	for side in ref subj; do
		awk -v m="$m" -v who="$([ $side = ref ] && echo bwrap || echo cordon)" '
			index($0, "] " m " ") && /(crashed|timed out|uncaught|worker)/ { print "#   " who " log: " $0 }
			$0 ~ "^test " m " crashed -- " { inblock = 1 }
			inblock && /^[A-Za-z_][A-Za-z_.]*(Error|Exception): / {
				print "#   " who " log: ended with " $0; inblock = 0 }' \
			"$TEST_TMP/$side.log" "$TEST_TMP/$side-mp.log" 2>/dev/null
	done
done
[ "$TAP_FAILED" -eq 0 ] || diag "regrtest logs (ref.log: bwrap, subj.log: cordon) and reports: $RESULTS"
done_testing

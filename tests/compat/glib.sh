#!/usr/bin/env bash
# Compatibility: GLib's own test programs (Debian's libglib2.0-tests, the "installed tests" in
# /usr/libexec/installed-tests/glib), C code of a real library, inside cordon's default sandbox
# and inside an equally strict bubblewrap sandbox (tests/compat/compat-lib.sh), compared case by
# case from their TAP output (GTest --tap). A case that passes under bwrap and does not pass under
# cordon (fails, is skipped, or never ran because its program aborted earlier) is a failure,
# named with the assertion it hit; the programs with one run again on both sides first, and a
# case that then passes under cordon or fails under bwrap is reported as flaky. The programs
# cover GSocket over TCP/UDP on the loopback and AF_UNIX, fd passing and peer credentials,
# D-Bus between peers, GSubprocess and g_spawn, UNIX signals in the main loop, threads and
# their pools, mmap (GMappedFile), temp files and the file system (GFile), pollable streams.
# tests/compat/README.md says how to read a failure.
#
# Skipped under CORDON_SKIP_SLOW=1 (about 40 s a side). A missing bwrap or test package is a
# skip, a failure under CORDON_MUST_WORK=1. COMPAT_GLIB_TESTS (space-separated program names)
# replaces the list.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "$top_srcdir/tests/compat/compat-lib.sh"

if [ -n "${CORDON_SKIP_SLOW:-}" ]; then
	echo "1..0 # SKIP slow: run in the other build"
	exit 0
fi

D=/usr/libexec/installed-tests/glib
PY=/usr/bin/python3
COMPARE="$PY $top_srcdir/tests/compat/junit-compare.py"
# Left out: the slow ones that measure the scheduler (mutex, rec-mutex, rwlock, timeout) and
# those that need a desktop session.
PROGRAMS=${COMPAT_GLIB_TESTS:-socket socket-listener socket-service socket-address inet-address
unix-fd unix-streams credentials gdbus-peer network-address pollable gsubprocess
spawn-singlethread spawn-multithreaded spawn-path-search unix mainloop contexts thread
thread-pool cond once asyncqueue private mappedfile fileutils file live-g-file g-file-info
io-channel}

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v bwrap >/dev/null || skip_all "bwrap missing (bubblewrap)"
[ -x "$PY" ] || skip_all "$PY missing (python3)"
[ -x "$D/socket" ] || skip_all "GLib's installed tests missing (libglib2.0-tests)"

read -r -d '' -a PROGS <<<"$PROGRAMS" || true
work_b="$TEST_TMP/bwrap-work"
work_c="$TEST_TMP/cordon-work"
# 1-3. both sandboxes start and look the same from inside
compat_begin "$work_b" "$work_c" "${#PROGS[@]}"

# The runner, run inside each sandbox: runner OUTDIR PROGRAM…, two at a time, each in a
# directory of its own, OUTDIR/PROGRAM.tap its output.
cat >"$TEST_TMP/runner.sh" <<EOF
#!/bin/sh
out=\$1
shift
mkdir -p "\$out"
export G_TEST_SRCDIR=$D G_TEST_BUILDDIR=$D
printf '%s\n' "\$@" | xargs -P2 -I{} sh -c 'mkdir -p "\$1/{}.d" && cd "\$1/{}.d" &&
	timeout -k 5 120 "\$0/{}" --tap >"\$1/{}.tap" 2>&1; echo "\$?" >"\$1/{}.exit"' "$D" "\$out"
EOF
chmod 0755 "$TEST_TMP/runner.sh"
cp "$TEST_TMP/runner.sh" "$work_b/"
cp "$TEST_TMP/runner.sh" "$work_c/"

t0=$(date +%s)
compat_bwrap "$work_b" "$work_b/runner.sh" "$work_b/ref" "${PROGS[@]}"
t1=$(date +%s)
compat_cordon "$work_c" "$work_c/runner.sh" "$work_c/subj" "${PROGS[@]}"
t2=$(date +%s)
diag "wall time: bwrap $((t1 - t0)) s, cordon $((t2 - t1)) s"

progs=$(IFS=,; echo "${PROGS[*]}")
result=$($COMPARE "$progs" "$work_b/ref" "$work_c/subj")
rprogs=$(echo "$result" | awk -F'\t' '$1 == "regression" { print $2 }' | sort -u)
if [ -n "$rprogs" ]; then
	# the programs with a regression once more, whole, on both sides
	# shellcheck disable=SC2086 # a word list
	compat_bwrap "$work_b" "$work_b/runner.sh" "$work_b/ref-rerun" $rprogs
	# shellcheck disable=SC2086
	compat_cordon "$work_c" "$work_c/runner.sh" "$work_c/subj-rerun" $rprogs
	result=$($COMPARE "$progs" "$work_b/ref" "$work_c/subj" "$work_b/ref-rerun" \
		"$work_c/subj-rerun")
fi

RESULTS=$(compat_results glib)
cp -r "$work_b/ref" "$work_c/subj" "$RESULTS"/ 2>/dev/null
echo "$result" >"$RESULTS/result.tsv"

for m in "${PROGS[@]}"; do
	compat_report "$result" "$m" \
		"; exit status bwrap $(cat "$work_b/ref/$m.exit" 2>/dev/null), cordon $(cat "$work_c/subj/$m.exit" 2>/dev/null)"
done
[ "$TAP_FAILED" -eq 0 ] || diag "TAP outputs (ref: bwrap, subj: cordon): $RESULTS"
done_testing

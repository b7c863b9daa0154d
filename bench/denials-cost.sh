#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What reading denials (docs/DENIALS.md) costs a spawn, with the kernel's audit on: bench/spawn
# with a launcherd that cannot read the audit records (A: CAP_AUDIT_READ taken out of the
# bounding set, so no denial reader) against one that can (B), whole runs in the order A B B A,
# repeated. Run as root from a build tree (uses ./bench/spawn and ./cordon-launcherd):
#   ../bench/denials-cost.sh [--repeat N] [BENCH/SPAWN OPTIONS...]
#   ../bench/denials-cost.sh --rounds 150 --seconds 0.4 --plan-filter
# N defaults to 6 (2N pairs); the other options go to bench/spawn as they are. The kernel's
# audit_enabled and backlog limit are set to 1 and 8192 for the runs and put back as they were
# on exit (Ctrl-C included). Prints each side's medians, the per-pair ratios B/A (median and
# quartiles) of launcherd's latency, of what it adds to fork+exec, of its throughput and of its
# CPU per sandbox, and the load average before and after. Exit status 2 when the kernel has no
# audit or launcherd cannot read it (CAP_AUDIT_READ); 1 when a run fails.
set -euo pipefail
me=denials-cost.sh
repeat=6
args=()
while [ $# -gt 0 ]; do
	case $1 in
	--repeat)
		[ $# -ge 2 ] || { echo "$me: --repeat needs a number" >&2; exit 2; }
		repeat=$2
		shift
		;;
	-h | --help) sed -n '3,14p' "$0"; exit 0 ;;
	*) args+=("$1") ;;
	esac
	shift
done
case $repeat in
'' | *[!0-9]* | 0) echo "$me: --repeat: not a positive number: $repeat" >&2; exit 2 ;;
esac
die2() { echo "$me: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die2 "run as root (bench/spawn starts a privileged launcherd; the audit settings need CAP_AUDIT_CONTROL)"
if [ ! -x ./bench/spawn ] || [ ! -x ./cordon-launcherd ]; then
	die2 "run from a build tree after 'make bench' (no ./bench/spawn or ./cordon-launcherd here)"
fi
command -v setpriv >/dev/null || die2 "setpriv (util-linux) is needed"
command -v python3 >/dev/null || die2 "python3 is needed"
src=$(cd "$(dirname "$0")/.." && pwd)
audit_py=$src/tests/integration/denials.py
hello_py=$src/tests/helpers/launcherd-hello.py
no_reader=(setpriv --bounding-set=-audit_read)
# B goes through setpriv too, dropping a capability launcherd never uses, so that the two sides
# differ in CAP_AUDIT_READ alone (B without setpriv ran its fork+exec reference 4-9 % slower).
with_reader=(setpriv --bounding-set=-wake_alarm)

# "ENABLED BACKLOG-LIMIT LOST", or exit status 2 when the kernel has no audit.
prev=$(python3 "$audit_py" --audit 2>&1) || {
	rc=$?
	[ $rc = 2 ] && die2 "the kernel has no audit ($prev)"
	echo "$me: cannot read the kernel's audit state: $prev" >&2
	exit 1
}
read -r prev_enabled prev_backlog _ <<<"$prev"

tmp=$(mktemp -d /tmp/cordon-denials-cost.XXXXXX)
ld_pid=
set_audit=0
restore() {
	[ -n "$ld_pid" ] && { kill "$ld_pid" 2>/dev/null; wait "$ld_pid" 2>/dev/null || true; }
	ld_pid=
	if [ "$set_audit" = 1 ]; then
		if now=$(python3 "$audit_py" --audit "$prev_enabled" "$prev_backlog" 2>&1); then
			echo "kernel audit restored: audit_enabled $prev_enabled, backlog limit $prev_backlog"
		else
			echo "$me: could not restore the kernel's audit ($now)" >&2
		fi
		set_audit=0
	fi
	rm -rf "$tmp"
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# audit_enabled 2 is "locked" (on, and cannot be changed until reboot): leave it so.
audit_on() {
	[ "$prev_enabled" = 2 ] && return 0
	set_audit=1
	python3 "$audit_py" --audit 1 8192 >/dev/null
}
audit_on || die2 "cannot turn the kernel's audit on"

# Does a launcherd started as "$@" read denials? Prints hello's "denials" member.
printf '{"maxNetwork":"host"}\n' >"$tmp/floor.json"
chmod 0644 "$tmp/floor.json"
reader() {
	local sock=$tmp/probe.sock out
	rm -f "$sock"
	"$@" ./cordon-launcherd --socket "$sock" --floor "$tmp/floor.json" 2>"$tmp/probe.err" &
	ld_pid=$!
	for _ in $(seq 200); do
		[ -S "$sock" ] && break
		sleep 0.02
	done
	out=$(python3 "$hello_py" "$sock" 5 2>&1 |
		python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("denials")))' 2>&1) ||
		out="no hello: $(cat "$tmp/probe.err")"
	kill "$ld_pid" 2>/dev/null || true
	wait "$ld_pid" 2>/dev/null || true
	ld_pid=
	echo "$out"
}
b_denials=$(reader "${with_reader[@]}")
case $b_denials in
*'"reader": true'*) ;;
*) die2 "launcherd cannot read the audit records with CAP_AUDIT_READ (hello's denials: $b_denials)" ;;
esac
a_denials=$(reader "${no_reader[@]}")
case $a_denials in
*'"reader": false'*) ;;
*) die2 "setpriv --bounding-set=-audit_read did not take the reader away (hello's denials: $a_denials)" ;;
esac

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== denials cost: bench/spawn ${args[*]:-(defaults)}; ABBA x $repeat ($((2 * repeat)) pairs)"
if [ "$prev_enabled" = 2 ]; then
	echo "kernel $(uname -r), $(nproc) CPUs; audit_enabled 2 (locked on), backlog limit $prev_backlog: left as they are"
else
	echo "kernel $(uname -r), $(nproc) CPUs; audit_enabled was $prev_enabled (backlog limit $prev_backlog), now 1 (8192) for the runs"
fi
echo "A: ${no_reader[*]}: hello's denials $a_denials"
echo "B: ${with_reader[*]}: hello's denials $b_denials"
echo "load average before: $load_before"

# One whole bench/spawn run of side A or B; its figures appended to $tmp/runs as
# "rep side latency added throughput cpu forkexec otherload".
run() {
	local rep=$1 side=$2 out=$tmp/run-$1-$2-$3.txt state
	local cmd=(./bench/spawn --launcherd ./cordon-launcherd "${args[@]}")
	state=$(python3 "$audit_py" --audit 2>/dev/null || true)
	if [ "$prev_enabled" != 2 ] && [ "${state%% *}" != 1 ]; then
		echo "  (audit was off before rep $rep $side: turned on again; something else changed it)"
		audit_on
	fi
	if [ "$side" = A ]; then cmd=("${no_reader[@]}" "${cmd[@]}"); else cmd=("${with_reader[@]}" "${cmd[@]}"); fi
	if ! "${cmd[@]}" >"$out" 2>&1; then
		echo "$me: rep $rep $side: bench/spawn failed:" >&2
		cat "$out" >&2
		exit 1
	fi
	[ "$rep$side$3" = 1A1 ] && head -n1 "$out" | sed 's/^/bench\/spawn: /'
	python3 - "$rep" "$side" "$out" >>"$tmp/runs" <<-'EOF'
		import re, sys
		rep, side, text = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
		def num(pattern):
		    m = re.search(pattern, text, re.M)
		    if not m:
		        sys.exit("denials-cost.sh: no %r in bench/spawn's output" % pattern)
		    return m.group(1)
		print(rep, side,
		      num(r"^  launcherd \(full\) +([-0-9.]+) ms"),
		      num(r"^  launcherd - fork\+exec +([-0-9.]+) ms"),
		      num(r"^  launcherd +([-0-9.]+) sandboxes/s"),
		      num(r"CPU per sandbox .*: launcherd ([-0-9.]+) ms"),
		      num(r"^  fork\+exec +([-0-9.]+) ms"),
		      num(r"other load ([-0-9.]+)% CPU"))
	EOF
	tail -n1 "$tmp/runs" | awk '{ printf "  rep %d %s: latency %s ms, added %s ms, %s sandboxes/s, CPU %s ms/sandbox (fork+exec %s ms, other load %s%%)\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
}
: >"$tmp/runs"
for rep in $(seq "$repeat"); do
	run "$rep" A 1
	run "$rep" B 1
	run "$rep" B 2
	run "$rep" A 2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# Pairs in run order: (A1, B1) and (B2, A2) of each repetition.
python3 - "$tmp/runs" <<-'EOF'
	import sys
	rows = [l.split() for l in open(sys.argv[1])]
	def median(v):
	    v = sorted(v)
	    n = len(v)
	    return (v[n // 2] + v[(n - 1) // 2]) / 2
	def quartiles(v):
	    # linear between order statistics (statistics.quantiles' "inclusive")
	    v = sorted(v)
	    def q(p):
	        x = p * (len(v) - 1)
	        i = int(x)
	        return v[i] + (v[min(i + 1, len(v) - 1)] - v[i]) * (x - i)
	    return q(0.25), q(0.5), q(0.75)
	names = [("launcherd latency, request -> reaped (ms)", 2, "%.3f"),
	         ("launcherd - fork+exec (ms)", 3, "%.3f"),
	         ("throughput, 2 clients (sandboxes/s)", 4, "%.1f"),
	         ("CPU per sandbox (ms)", 5, "%.3f"),
	         ("fork+exec, for reference (ms)", 6, "%.3f")]
	side = {s: [r for r in rows if r[1] == s] for s in "AB"}
	pairs = []
	for i in range(0, len(rows), 4):
	    pairs.append((rows[i], rows[i + 1]))  # A1 B1
	    pairs.append((rows[i + 3], rows[i + 2]))  # A2 B2 (run as B2 A2)
	print("%-42s %10s %10s   %s" % ("", "A median", "B median", "B/A per pair: median (quartiles)"))
	for name, k, fmt in names:
	    a = median([float(r[k]) for r in side["A"]])
	    b = median([float(r[k]) for r in side["B"]])
	    ratios = [float(pb[k]) / float(pa[k]) for pa, pb in pairs if float(pa[k]) != 0]
	    q1, q2, q3 = quartiles(ratios)
	    print("%-42s %10s %10s   %.3f (%.3f-%.3f), %d pairs" %
	          (name, fmt % a, fmt % b, q2, q1, q3, len(ratios)))
	print("other load before each run (%% CPU, median): A %.0f, B %.0f" %
	      (median([float(r[7]) for r in side["A"]]), median([float(r[7]) for r in side["B"]])))
EOF
echo "load average before: $load_before; after: $load_after"

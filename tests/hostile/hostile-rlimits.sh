#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A sandbox starts from its requester's resource limits, never launcherd's: a requester run
# under `prlimit --nproc=64:64 --nofile=256:256 --core=0:0` gets a sandbox whose limits are no
# higher; a plan may lower them, and a plan that asks for more than the requester's hard limit
# is refused naming plan.rlimits. The sandbox reports its limits from /proc/self/limits.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
command -v prlimit >/dev/null || skip_all "prlimit missing"
ld_start
plan 9

# A user of its own: RLIMIT_NPROC counts every process of the uid, and other tests running
# beside this one (make -j) run many as the shared test users.
A=cordon-test3
id "$A" >/dev/null 2>&1 || useradd -M -s /bin/sh "$A" 2>/dev/null ||
	skip_all "cannot create test user $A"
h_plan "$T/limits.json" '["/bin/cat", "/proc/self/limits"]'

# run NAME [PLAN_JQ]: the plan (changed by PLAN_JQ), as A under the low limits; the sandbox's
# /proc/self/limits in $T/NAME.limits, the client's output in $T/NAME.out.
run() {
	jq -c "${2:-.}" "$T/limits.json" >"$T/$1.json"
	: >"$T/$1.limits"
	chmod 0666 "$T/$1.limits"
	as_user $A prlimit --nproc=64:64 --nofile=256:256 --core=0:0 -- \
		timeout -s KILL 30 "$HC" --socket "$T/ld.sock" --fd devnull --fd "wr:$T/$1.limits" \
		--fd devnull --fd path:/usr --fd path:"$HELPERS" --fd path:"$T/work" \
		--send "$T/$1.json" --wait-exit >"$T/$1.out" 2>>"$T/client.log"
}
# limit NAME "Max open files" soft|hard: one value of the sandbox's limits.
limit() {
	awk -v what="$2" -v col="$3" 'index($0, what) == 1 {
		n = split(substr($0, length(what) + 1), f, " +")
		for (i = 1; i <= n && f[i] == ""; i++) ;
		print (col == "soft" ? f[i] : f[i + 1])
	}' "$T/$1.limits"
}
# le VALUE MAX: VALUE is a number <= MAX ("unlimited" is not).
le() { [ -n "$1" ] && [ "$1" != unlimited ] && [ "$1" -le "$2" ]; }

# 1-3. The plan sets no limit: the requester's own.
run plain
diag "sandbox: nofile $(limit plain 'Max open files' soft)/$(limit plain 'Max open files' hard)," \
	"nproc $(limit plain 'Max processes' soft)/$(limit plain 'Max processes' hard)," \
	"core $(limit plain 'Max core file size' soft)/$(limit plain 'Max core file size' hard)" \
	"($(h_reply "$T/plain.out" | tr '\n' ' '))"
check "a requester under nofile 256:256 gets a sandbox with nofile <= 256" \
	eval 'le "$(limit plain "Max open files" soft)" 256 && le "$(limit plain "Max open files" hard)" 256'
check "…under nproc 64:64, nproc <= 64" \
	eval 'le "$(limit plain "Max processes" soft)" 64 && le "$(limit plain "Max processes" hard)" 64'
check "…under core 0:0, core 0" \
	eval 'le "$(limit plain "Max core file size" soft)" 0 && le "$(limit plain "Max core file size" hard)" 0'

# 4-6. A plan asking for more than the requester's hard limit: refused, naming plan.rlimits.
for ask in '{"nofile": 4096}' '{"nproc": 1000}' '{"core": 1048576}'; do
	run raise ".rlimits = $ask"
	reply=$(h_reply "$T/raise.out" | tail -1)
	check "a plan raising $ask above the requester's hard limit is refused naming plan.rlimits ($reply)" \
		grep -Eq '^error [a-z-]+ plan\.rlimits' <<<"$reply"
done

# 7-8. A plan may lower them, and ask for exactly the hard limit.
run lower '.rlimits = {"nofile": 128, "nproc": 32}'
check "a plan lowering them is applied (nofile $(limit lower 'Max open files' hard), nproc $(limit lower 'Max processes' hard))" \
	test "$(limit lower 'Max open files' hard)" = 128 -a "$(limit lower 'Max processes' hard)" = 32
run equal '.rlimits = {"nofile": 256}'
check "a plan asking for exactly the requester's hard limit runs ($(h_reply "$T/equal.out" | tr '\n' ' '))" \
	test "$(limit equal 'Max open files' hard)" = 256

check "launcherd is still running" ld_alive
tap_done

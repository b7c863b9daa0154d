#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bad plans, every field wrong in turn: each is refused with invalid-plan naming the field, the
# connection stays usable, and launcherd leaks no fd and no cgroup. Protocol violations
# (unknown request, spawn before hello, a second hello) end the connection.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
ld_start

cases='del(.argv)|plan.argv
.argv = "sh"|plan.argv
.argv = []|plan.argv
.argv = [""]|plan.argv[0]
.argv = ["/bin/true", 5]|plan.argv[1]
.envp = ["NOEQUALS"]|plan.envp[0]
.envp = ["=value"]|plan.envp[0]
.cwd = "work"|plan.cwd
.cwd = "/a/../b"|plan.cwd
.hostname = "bad host!"|plan.hostname
.hostname = ""|plan.hostname
.stdio.stdin = 9|plan.stdio.stdin
.stdio.stdfoo = 1|plan.stdio.stdfoo
.mounts = {}|plan.mounts
.mounts[0].type = "nfs"|plan.mounts[0].type
.mounts[0].target = "usr"|plan.mounts[0].target
.mounts[0].target = "/"|plan.mounts[0].target
.mounts[0].target = "/usr/"|plan.mounts[0].target
del(.mounts[0].source)|plan.mounts[0].source
.mounts[0].source = 42|plan.mounts[0].source
.mounts[0].source = -1|plan.mounts[0].source
.mounts[0].mode = 493|plan.mounts[0].mode
.mounts[0].readOnly = "yes"|plan.mounts[0].readOnly
.mounts[1].link = ""|plan.mounts[1].link
.mounts[8].sizeBytes = 1|plan.mounts[8].sizeBytes
.mounts[8].mode = 99999|plan.mounts[8].mode
.landlock.fs[0].access = ["fly"]|plan.landlock.fs[0].access[0]
.landlock.fs[0].access = []|plan.landlock.fs[0].access
.landlock.fs[0].path = "rel"|plan.landlock.fs[0].path
.landlock.fs[0].extra = 1|plan.landlock.fs[0].extra
.landlock.scope = ["x"]|plan.landlock.scope[0]
.landlock.net.bindTcp = [70000]|plan.landlock.net.bindTcp[0]
.landlock.net.udp = []|plan.landlock.net.udp
.landlock.required = 1|plan.landlock.required
.seccomp = {"program": 3}|plan.seccomp.program
.seccomp = {"program": 6, "denyAction": "maybe"}|plan.seccomp.denyAction
.seccomp = {}|plan.seccomp.program
.rlimits = {"nofile": -1}|plan.rlimits.nofile
.rlimits = {"bogus": 1}|plan.rlimits.bogus
.cgroup = {"pidsMax": 0}|plan.cgroup.pidsMax
.cgroup = {"memoryMaxBytes": 1024}|plan.cgroup.memoryMaxBytes
.cgroup = {"cpus": 2}|plan.cgroup.cpus
.network = "internet"|plan.network
.proxyPort = 8080|plan.proxyPort
.timeoutMs = -5|plan.timeoutMs
.dieWithRequester = "yes"|plan.dieWithRequester
.privileged = true|plan.privileged
.uid = 0|plan.uid
.controllingTty = true|plan.controllingTty'
n_cases=$(echo "$cases" | wc -l)
plan $((n_cases + 10))

printf '\001\002\003\004\005\006\007' >"$T/short.bpf"
chmod 0644 "$T/short.bpf"
make_plan "$T/base.json" '["/bin/true"]'

cg_snapshot "$T/cg-before"
fds_before=$(ld_fd_count)

echo "$cases" | while IFS='|' read -r expr field; do
	jq "$expr" "$T/base.json" >"$T/bad.json" || { not_ok "jq: $expr"; continue; }
	ld_run $STD_FDS --seccomp 6="$T/short.bpf" "$T/bad.json" >/dev/null 2>&1
	rc=$?
	got="$(json_field code) $(json_field field)"
	if [ "$rc" = 125 ] && [ "$got" = "invalid-plan $field" ]; then
		ok "refused: $expr ($field: $(json_field message | sed 's/^[^:]*: //'))"
	else
		not_ok "refused: $expr: expected invalid-plan $field, got rc $rc: $got"
	fi
done
# The subshell's counters are lost: recount from its output is not possible in POSIX sh, so
# the loop prints its own TAP lines with numbers continuing below.
_tap_n=$n_cases

jq '.seccomp = {"program": 6}' "$T/base.json" >"$T/bad.json"
ld_run $STD_FDS --seccomp 6="$T/short.bpf" "$T/bad.json" >/dev/null 2>&1
check "a seccomp program of 7 bytes is refused" test "$(json_field code) $(json_field field)" = "invalid-plan plan.seccomp.program"

jq '.mounts |= .[0:1] + [{"type": "bind", "source": 6, "target": "/usr/lib"}] + .[1:]' "$T/base.json" >"$T/bad.json"
ld_run $STD_FDS --fd 6=/etc/passwd "$T/bad.json" >/dev/null 2>&1
check "binding a file over a directory fails at the mount step, naming the mount" \
	test "$(json_field code) $(json_field step) $(json_field field)" = "setup-failed mount plan.mounts[1]"

make_plan "$T/good.json" '["/bin/true"]' ', "cgroup": {"pidsMax": 8}'
ld_run $STD_FDS "$T/good.json" >/dev/null 2>&1
check "a good plan still runs after the bad ones" test "$?/$(json_field reason)" = "0/exited"

sleep 0.2
check "no fd leaked by $n_cases refused plans" test "$(ld_fd_count)" = "$fds_before"
check "no cgroup leaked" test "$(cg_leaked_since "$T/cg-before")" = 0

# Protocol violations end the connection.
printf '%s\n' '{"type":"spawn","seq":1,"plan":{"argv":["/bin/true"]}}' >"$T/raw"
"$LP" --socket "$T/ld.sock" --raw "$T/raw" >"$T/raw.out"
check "spawn before hello ends the connection" test "$(jq -r .type "$T/raw.out")" = closed
printf '%s\n' '{"type":"hello","seq":1,"version":1}' '{"type":"hello","seq":2,"version":1}' >"$T/raw"
"$LP" --socket "$T/ld.sock" --raw "$T/raw" >"$T/raw.out"
check "a second hello ends the connection" test "$(jq -r .type "$T/raw.out" | tr '\n' ' ')" = "hello closed "
printf '%s\n' '{"type":"hello","seq":1,"version":1}' '{"type":"exec","seq":2}' >"$T/raw"
"$LP" --socket "$T/ld.sock" --raw "$T/raw" >"$T/raw.out"
check "an unknown request ends the connection" test "$(jq -r .type "$T/raw.out" | tr '\n' ' ')" = "hello closed "
printf '%s\n' '{"type":"hello","seq":1,"version":2}' >"$T/raw"
"$LP" --socket "$T/ld.sock" --raw "$T/raw" >"$T/raw.out"
check "an unknown protocol version is refused" test "$(jq -r .code "$T/raw.out" | head -1)" = invalid-plan
printf '%s\n' '{"type":"hello","seq":1,"version":1}' '{"type":"kill","seq":2,"sandbox":"sb-0000000000000000"}' >"$T/raw"
"$LP" --socket "$T/ld.sock" --raw "$T/raw" >"$T/raw.out"
check "kill of an unknown sandbox: not-found, connection kept" test "$(tail -1 "$T/raw.out" | jq -r .code)" = not-found
tap_done

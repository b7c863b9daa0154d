#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# End-to-end spawn through a privileged launcherd: hello, output, exit codes, identity of the
# requester, the confinement state of the payload, set-up and exec errors, nothing leaked.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
ld_start
plan 21

run_sh() { make_plan "$T/p.json" "$(jq -nc --arg c "$1" '["/bin/sh","-c",$c]')"; shift; ld_run "$@" $STD_FDS "$T/p.json"; }

fds_before=$(ld_fd_count)

"$LP" --socket "$T/ld.sock" --hello --result "$T/result.json"
check "hello: privileged mode, uid 0" test "$(jq -r '.mode + " " + (.uid|tostring)' "$T/result.json")" = "privileged 0"
check "hello: reports Landlock ABI and the floor" test "$(jq -r '(.landlockAbi > 0) and (.floor.maxNetwork == "proxy")' "$T/result.json")" = true

out=$(run_sh 'echo hello')
check "stdout reaches the requester" test "$out" = hello
check "exit report: exited 0" test "$(json_field reason)/$(json_field exitCode)" = "exited/0"

run_sh 'exit 7' >/dev/null
check "exit code is passed through" test "$?/$(json_field exitCode)" = "7/7"

out=$(run_sh 'id -u; id -g; id -G' --user $TEST_USER1)
uid=$(id -u $TEST_USER1)
gid=$(id -g $TEST_USER1)
check "runs as the connecting user (SO_PEERCRED), not root" test "$(echo $out)" = "$uid $gid $gid"

out=$(run_sh 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "' --user $TEST_USER1)
check "zero capabilities in every set, bounding set empty" test "$(echo "$out" | grep -c ' 0000000000000000')" = 5
check "no_new_privs set and seccomp filtering" test "$(echo "$out" | grep -E 'NoNewPrivs|Seccomp:' | tr '\n' ' ')" = "NoNewPrivs: 1 Seccomp: 2 "
# Securebits, so that even a uid-0 sandbox regains nothing by exec or setuid: noroot,
# no-setuid-fixup, keep-caps off, no-ambient-raise, each locked (0xef), as a user, as root, and
# in user mode.
make_plan "$T/sb.json" '["/probe/probe", "securebits"]'
sb="$(ld_run --user $TEST_USER1 $STD_FDS "$T/sb.json" 2>>"$T/client.log") $(ld_run $STD_FDS "$T/sb.json" 2>>"$T/client.log") $(ld_run --user-mode --user $TEST_USER1 $STD_FDS "$T/sb.json" 2>>"$T/client.log")"
check "securebits noroot, no-setuid-fixup, no-ambient-raise, all locked ($sb)" test "$sb" = "0xef 0xef 0xef"

out=$(run_sh 'echo $$; hostname; ls /')
check "payload is pid 2 of its own pid namespace (under cordon's init), hostname cordon" test "$(echo $out | cut -d' ' -f1-2)" = "2 cordon"
check "fresh root: only what the plan mounted" test "$(echo $out | cut -d' ' -f3-)" = "bin dev lib lib64 probe proc sbin tmp usr work"

# Namespaces: each sandbox its own IPC (from the pool in privileged mode), UTS, pid, mount and
# cgroup namespace, none the host's nor another sandbox's. Both alive at once: a namespace's
# number is reused once it is gone.
kinds="ipc uts pid mnt cgroup"
rm -f "$T/work/ns-a" "$T/work/ns-done"
make_plan "$T/ns-a.json" "[\"/bin/sh\", \"-c\", \"/probe/probe ns $kinds >/work/ns-a.tmp && mv /work/ns-a.tmp /work/ns-a && while [ ! -e /work/ns-done ]; do sleep 0.05; done\"]"
ld_run $STD_FDS "$T/ns-a.json" >/dev/null 2>>"$T/client.log" &
ns_client=$!
for _ in $(seq 1 100); do [ -s "$T/work/ns-a" ] && break; sleep 0.05; done
make_plan "$T/ns.json" "[\"/probe/probe\", \"ns\", $(printf '"%s", ' $kinds | sed 's/, $//')]"
ns_b=$(ld_run $STD_FDS "$T/ns.json" 2>>"$T/client.log" | tr '\n' ' ')
ns_a=$(tr '\n' ' ' <"$T/work/ns-a" 2>/dev/null)
touch "$T/work/ns-done"
wait $ns_client 2>/dev/null
ns_host=$(for k in $kinds; do readlink /proc/self/ns/$k; done | tr '\n' ' ')
diag "namespaces: host $ns_host; sandboxes $ns_a / $ns_b"
ns_fresh() {
	[ "$(echo $ns_a | wc -w)" = 5 ] || return 1
	for i in 1 2 3 4 5; do
		a=$(echo $ns_a | cut -d' ' -f$i)
		[ "$a" != "$(echo $ns_b | cut -d' ' -f$i)" ] && [ "$a" != "$(echo $ns_host | cut -d' ' -f$i)" ] ||
			return 1
	done
}
check "own IPC, UTS, pid, mount and cgroup namespaces: not the host's, not another sandbox's" ns_fresh

make_plan "$T/p.json" '["/no/such/program"]'
ld_run $STD_FDS "$T/p.json" >/dev/null 2>&1
rc=$?
check "exec of a missing program: exec-failed errno 2, exit 127" test "$rc/$(json_field code)/$(json_field errno)" = "127/exec-failed/2"

make_plan "$T/p.json" '["/bin/true"]'
sed -i 's|"cwd": "/"|"cwd": "/nonexistent"|' "$T/p.json"
ld_run $STD_FDS "$T/p.json" >/dev/null 2>&1
check "set-up failure names the step (cwd) and errno" test "$(json_field code)/$(json_field step)/$(json_field errno)" = "setup-failed/cwd/2"

make_plan "$T/p0.json" '["/bin/true"]'
jq '.mounts |= .[0:7] + [{"type": "bind", "source": 4, "target": "/work/newdir"}] + .[7:]' "$T/p0.json" >"$T/p.json"
ld_run $STD_FDS "$T/p.json" >/dev/null 2>&1
check "no mount point is created inside a requester's bind (mount step, field named)" \
	test "$(json_field step)/$(json_field field)/$(json_field errno)/$(test -e "$T/work/newdir" && echo created)" = "mount/plan.mounts[7]/2/"

# User mode: same plan, unprivileged launcherd started by the client over a socketpair.
out=$(run_sh 'echo $$ $(id -u)' --user $TEST_USER1 --user-mode)
check "user mode: sandbox runs as the user, pid 2 under the init" test "$out" = "2 $uid"
out=$(run_sh 'cat /proc/self/uid_map' --user $TEST_USER1 --user-mode)
check "user mode: only the user is mapped, to itself" test "$(echo $out)" = "$uid $uid 1"

# Both ways to a sandbox's mount namespace give the same tree: the pool's prepared ones (above,
# with CAP_SYS_CHROOT) and, without that capability, a copy of launcherd's that the child pivots
# away from and detaches itself.
mounts_pooled=$(run_sh 'cut -d" " -f5 /proc/self/mountinfo | sort | tr "\n" " "' --user $TEST_USER1)
setpriv --bounding-set -sys_chroot "$LAUNCHERD" --socket "$T/ld2.sock" --floor "$T/floor.json" 2>"$T/ld2.log" &
ld2=$!
for _ in $(seq 1 100); do [ -S "$T/ld2.sock" ] && break; sleep 0.05; done
make_plan "$T/p2.json" "$(jq -nc '["/bin/sh","-c","cut -d\" \" -f5 /proc/self/mountinfo | sort | tr \"\\n\" \" \""]')"
mounts_copied=$(as_user $TEST_USER1 "$LP" --socket "$T/ld2.sock" $STD_FDS "$T/p2.json" 2>>"$T/client.log")
ns_fds2=$(ls -l /proc/$ld2/fd | grep -c 'mnt:\[')
kill $ld2 2>/dev/null
wait $ld2 2>/dev/null
check "without CAP_SYS_CHROOT launcherd prepares no mount namespace ($ns_fds2 held)" test "$ns_fds2" = 0
check "…and its sandboxes get the same mount tree ($mounts_copied)" \
	test -n "$mounts_copied" -a "$mounts_copied" = "$mounts_pooled"

sleep 0.2
fds_after=$(ld_fd_count)
check "launcherd leaked no fd over $((_tap_n)) spawns ($fds_before -> $fds_after)" test "$fds_before" = "$fds_after"
# The pool's namespaces are left out above; they must stay within the pool's bounds (4 fresh
# network and 4 empty mount namespaces, one shared "unix" namespace per user): a finished
# sandbox's mount namespace is let go of once its exit is reported.
ns_fds=$(ls -l /proc/$LD_PID/fd | grep -c 'mnt:\[')
# With CAP_SYS_CHROOT (bit 18) in our bounding set launcherd has it too and keeps a pool.
min=$(( (0x$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status) >> 18) & 1 ))
check "no mount namespace kept past its sandbox ($ns_fds held, pool of 4)" \
	test "$ns_fds" -le 4 -a "$ns_fds" -ge "$min"
tap_done

#!/usr/bin/env bash
# `cordon run` on a terminal, driven through tmux: the command gets a pseudo-terminal of its own
# as its controlling terminal (job control, ^C/^Z/^\ to its foreground job, the window size),
# named /dev/console inside (tty), this terminal is raw while it runs and restored however the
# CLI ends, and the exit status is the command's. Off a terminal nothing changes unless -t asks.
# `cordon run --detach -t` and `cordon attach`: the output kept while nobody is attached and
# replayed, Ctrl-P Ctrl-Q to detach, the last attach taking over, the exit status; refusals.
# Also as an ordinary user (a user-mode launcher).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v tmux >/dev/null || skip_all "tmux is not installed (scripts/packages.txt)"
plan 52

work="$TEST_TMP/work"
mkdir -p "$work"
cd "$work" || exit 1

TMUX_SOCK="$TEST_TMP/tmux.sock"
tm() { tmux -S "$TMUX_SOCK" "$@"; }
trap 'tm kill-server 2>/dev/null; cleanup' EXIT

# The environment the CLI needs, spelled out: the pane's shell is tmux's, not ours.
cli_env="cd '$work' && env XDG_RUNTIME_DIR='$XDG_RUNTIME_DIR' XDG_STATE_HOME='$XDG_STATE_HOME' \
CORDON_CONTROLLER='$CORDON_CONTROLLER' CORDON_LAUNCHERD='$CORDON_LAUNCHERD' \
CORDON_LAUNCHERD_SOCKET='$CORDON_LAUNCHERD_SOCKET' TERM=screen"
# After the CLI: its status, then whether the terminal is canonical with echo again.
after='echo CLI-EXIT=$?; stty -a | tr " ;" "\n\n" | grep -xE -- "-?(icanon|echo)" | tr "\n" " "; echo STTY-END; exec sleep 1000'

screen() { tm capture-pane -p -t "$1"; }
# Wait (up to 15 s) until the pane's screen matches the extended regex.
wait_for() {
	local i
	for i in $(seq 150); do
		screen "$1" | grep -qE -- "$2" && return 0
		sleep 0.1
	done
	diag "pane $1 never showed /$2/; it shows:" "$(screen "$1")"
	return 1
}
# Type a line and wait for what it prints.
type_wait() {
	tm send-keys -t "$1" "$2" Enter
	wait_for "$1" "$3"
}

# Off a terminal: no pty (stdin is a file, stdout a pipe); -t forces one.
out=$("$CORDON" run -- sh -c '[ -t 0 ] && echo tty || echo notty' </dev/null)
is notty "$out" "off a terminal the command gets our stdio, no terminal"
out=$("$CORDON" run -t -- sh -c '[ -t 0 ] && [ -t 1 ] && echo tty; readlink /proc/self/fd/0; tty' \
	</dev/null | tr -d '\r')
is "tty" "$(echo "$out" | head -n1)" "-t gives the command a terminal off a terminal too"
case "$(echo "$out" | sed -n 2p)" in /dev/pts/*) r=0 ;; *) r=1 ;; esac
ok $r "the terminal is a pty slave ($(echo "$out" | sed -n 2p))"
is /dev/console "$(echo "$out" | sed -n 3p)" "tty names it inside: /dev/console"
out=$("$CORDON" run -t -- sh -c '[ "$(stat -c %t:%T:%i /dev/console)" = \
	"$(stat -L -c %t:%T:%i /proc/self/fd/0)" ] && echo same; chmod 0666 /dev/console' \
	</dev/null 2>&1 | tr -d '\r')
echo "$out" | grep -qx same
ok $? "/dev/console is the very terminal of its stdio (${out//$'\n'/ })"
echo "$out" | grep -q 'Read-only file system'
ok $? "…bound read-only: no chmod through it"
out=$("$CORDON" run -T -- sh -c 'tty; stat -c %s:%a /dev/console; cat /dev/console' </dev/null 2>&1)
printf '%s\n' "$out" | grep -qx 'not a tty' && printf '%s\n' "$out" | grep -qx '0:0' &&
	printf '%s\n' "$out" | grep -q 'Permission denied'
ok $? "without a terminal /dev/console is an empty file nobody may open (${out//$'\n'/ })"
"$CORDON" exec -t -- true 2>/dev/null
is 125 $? "exec -t is a usage error (exec has no terminal)"

# On a terminal: an interactive bash.
tm -f /dev/null new-session -d -x 100 -y 30 -s a \
	"$cli_env '$CORDON' run -- bash --norc; $after"
wait_for a 'bash-[0-9.]+[#$] ?$'
ok $? "bash starts and prompts"
pane_tty=$(tm display -p -t a '#{pane_tty}')
stty -a -F "$pane_tty" | grep -qw -- -icanon
ok $? "the CLI's terminal ($pane_tty) is in raw mode while the command runs"
type_wait a 'echo T=$(readlink /proc/self/fd/0) $([ -t 0 ] && echo istty)' 'T=/dev/pts/[0-9]+ istty'
ok $? "the command's stdin is a pty of its own"
type_wait a 'echo TTY=$(tty)' '^TTY=/dev/console$'
ok $? "tty names it: /dev/console"
type_wait a 'echo hello >/dev/tty && echo CT=$((40+2))' '^CT=42'
ok $? "/dev/tty opens: the pty is the controlling terminal"
! screen a | grep -qE 'no job control|cannot set terminal process group'
ok $? "bash says nothing about job control"
type_wait a 'echo JC=$(case $- in *m*) echo on;; esac)' '^JC=on'
ok $? "job control is on"

tm send-keys -t a 'sleep 100' Enter
sleep 0.5
tm send-keys -t a C-c
type_wait a 'echo RC=$?' '^RC=130'
ok $? "^C interrupts the foreground command (status 130) and the prompt returns"

tm send-keys -t a 'sleep 101' Enter
sleep 0.5
tm send-keys -t a C-z
wait_for a 'Stopped +sleep 101'
ok $? "^Z stops the foreground job"
type_wait a 'jobs; echo J=done' '^J=done'
screen a | grep -A1 -E '^bash.*jobs; echo J=done' | grep -qE '^\[1\]\+ +Stopped +sleep 101'
ok $? "jobs lists it as stopped"
tm send-keys -t a 'fg' Enter
sleep 0.5
tm send-keys -t a C-c
type_wait a 'echo FG=$?' '^FG=130'
ok $? "fg brings it back; ^C ends it"

tm send-keys -t a 'sleep 102' Enter
sleep 0.5
tm send-keys -t a 'C-\'
type_wait a 'echo QT=$?' '^QT=131'
ok $? "^\\ quits the foreground command (SIGQUIT, 131)"

tm resize-window -t a -x 90 -y 25
sleep 0.5
type_wait a 'echo SZ=$(stty size)' '^SZ=25 90'
ok $? "a resize reaches the command's terminal (stty size)"

# A full-screen program: less draws the file's top and its prompt on the last line.
if command -v less >/dev/null; then
	tm send-keys -t a 'clear; seq 1 200 >/tmp/lines; less /tmp/lines' Enter
	wait_for a '^/tmp/lines' &&
		[ "$(screen a | head -n1)" = 1 ] && [ "$(screen a | sed -n 24p)" = 24 ]
	ok $? "less draws a full screen (lines 1 to 24 and its prompt)"
	tm send-keys -t a q
	type_wait a 'echo LQ=$((2+3))' '^LQ=5'
	ok $? "less quits and the shell is back"
else
	skip "less is not installed"
	skip "less is not installed"
fi

tm send-keys -t a 'exit 3' Enter
wait_for a '^CLI-EXIT=3$'
ok $? "exit 3 inside: cordon exits 3"
wait_for a 'STTY-END' && screen a | grep -qE '^icanon echo STTY-END'
ok $? "the terminal is canonical with echo again after a normal exit"

# SIGTERM to the CLI: it ends, and the terminal comes back as it was.
tm -f /dev/null new-session -d -x 100 -y 30 -s b \
	"$cli_env '$CORDON' run -- bash --norc; $after"
wait_for b 'bash-[0-9.]+[#$] ?$'
cli=$(pgrep -P "$(tm display -p -t b '#{pane_pid}')" -x cordon)
[ -n "$cli" ] && stty -a -F "$(tm display -p -t b '#{pane_tty}')" | grep -qw -- -icanon &&
	kill -TERM "$cli"
wait_for b 'CLI-EXIT=143$'
ok $? "SIGTERM to the CLI ($cli) ends it (143)"
wait_for b 'STTY-END' && screen b | grep -qE '^icanon echo STTY-END'
ok $? "the terminal is canonical with echo again after SIGTERM"

# Detached on a terminal of its own, attached later.
id=$("$CORDON" run --detach -t -- bash --norc 2>&1)
case "$id" in p[0-9]*) r=0 ;; *) r=1 ;; esac
ok $r "run --detach -t prints the process id ($id)"
attach_pane() { # NAME ID: a pane attached to ID (its CLI's status and terminal after it)
	tm -f /dev/null new-session -d -x 100 -y 30 -s "$1" "$cli_env '$CORDON' attach $2; $after"
}
attach_pane c "$id"
wait_for c 'bash-[0-9.]+[#$] ?$'
ok $? "attach shows the prompt bash printed while nobody was attached (replayed)"
stty -a -F "$(tm display -p -t c '#{pane_tty}')" | grep -qw -- -icanon
ok $? "the attached terminal is in raw mode"
type_wait c 'echo AT=$((6*7)) $(tty)' '^AT=42 /dev/console$'
ok $? "what is typed reaches the command and its output comes back"
# Output while nobody is attached: drained (the command never blocks on it), the last kept.
tm send-keys -t c '(sleep 1; seq 1 200000; echo SEQ-END; : >seq-done) &' Enter
tm send-keys -t c C-p C-q
wait_for c '^CLI-EXIT=0$' && screen c | grep -q "detached from $id"
ok $? "Ctrl-P Ctrl-Q detaches (exit 0)"
wait_for c 'STTY-END' && screen c | grep -qE '^icanon echo STTY-END'
ok $? "the terminal is canonical with echo again after detaching"
"$CORDON" ps | grep -qE "^$id +running"
ok $? "the command runs on"
for _ in $(seq 150); do [ -e seq-done ] && break; sleep 0.1; done
[ -e seq-done ]
ok $? "it wrote 1.2 MB to its terminal with nobody attached"
sleep 0.3 # the controller's last reads of it
"$CORDON" attach "$id" </dev/null >replay.out 2>&1 &
att=$!
for _ in $(seq 50); do grep -q SEQ-END replay.out && break; sleep 0.1; done
kill -TERM "$att"
wait "$att"
is 143 $? "attach off a terminal: SIGTERM ends it (143)"
size=$(wc -c <replay.out)
[ "$size" -le 65536 ] && grep -q '^200000.$' replay.out && grep -q SEQ-END replay.out &&
	head -n1 replay.out | grep -qE '^[0-9]+.$'
ok $? "the replay is the last output, at most 64 KiB, from a line's start ($size bytes)"
"$CORDON" ps | grep -qE "^$id +running"
ok $? "…and the command still runs"

# The last to attach takes over; the command's exit ends the attach with its status.
attach_pane d "$id"
wait_for d 'SEQ-END'
ok $? "attaching again replays what it wrote meanwhile"
attach_pane e "$id"
wait_for d '^CLI-EXIT=0$' && screen d | grep -q "another attach took over $id"
ok $? "a second attach takes over: the first one ends (exit 0), saying so"
type_wait e 'echo TK=ok' '^TK=ok'
ok $? "the new one is attached"
tm send-keys -t e 'cat -v' Enter
sleep 0.5
tm send-keys -t e C-p z Enter
wait_for e '^\^Pz$'
ok $? "a Ctrl-P without Ctrl-Q after it reaches the command, with the key after it"
tm send-keys -t e C-d
type_wait e 'echo CV=done' '^CV=done'
tm send-keys -t e 'exit 5' Enter
wait_for e '^CLI-EXIT=5$'
ok $? "exit 5 inside while attached: cordon attach exits 5"
"$CORDON" attach "$id" 2>err.out
rc=$?
[ $rc = 1 ] && grep -q 'has exited' err.out
ok $? "attach to an exited process: exit 1 ($rc: $(cat err.out))"

# Refusals: no terminal (125, saying why), no such process (1), not detached (1).
id2=$("$CORDON" run --detach -- sleep 100)
"$CORDON" attach "$id2" 2>err.out
rc=$?
[ $rc = 125 ] && grep -q "$id2 has no terminal" err.out
ok $? "attach to a process without a terminal: exit 125 ($rc: $(cat err.out))"
"$CORDON" kill "$id2" >/dev/null
"$CORDON" attach p999999 2>/dev/null
is 1 $? "attach to no such process: exit 1"
tm -f /dev/null new-session -d -x 100 -y 30 -s g "$cli_env '$CORDON' run -- bash --norc; $after"
wait_for g 'bash-[0-9.]+[#$] ?$'
id3=$("$CORDON" ps | awk '$2 == "running" && $5 == "bash" {print $1}' | tail -n1)
"$CORDON" attach "$id3" 2>err.out
rc=$?
[ $rc = 1 ] && grep -q 'not detached' err.out
ok $? "attach to a process its cordon run relays: exit 1 ($rc: $(cat err.out))"
type_wait g 'echo STILL=here' '^STILL=here'
ok $? "…which keeps its terminal"
tm send-keys -t g 'exit' Enter

# An ordinary user (nobody, a user-mode launcher): the terminal's name, detach and attach.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	u="$TEST_TMP/nobody"
	mkdir -p "$u/run" "$u/state" "$u/work" && chown -R 65534:65534 "$u" && chmod 0700 "$u/run"
	nb_env="cd '$u/work' && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME='$u' \
XDG_RUNTIME_DIR='$u/run' XDG_STATE_HOME='$u/state' CORDON_CONTROLLER='$CORDON_CONTROLLER' \
CORDON_LAUNCHERD='$CORDON_LAUNCHERD' CORDON_LAUNCHERD_SOCKET='$CORDON_LAUNCHERD_SOCKET' TERM=screen"
	as_nobody() { sh -c "$nb_env $*"; }
	out=$(as_nobody "'$CORDON' run -t -- sh -c 'id -u; tty'" </dev/null | tr -d '\r' | tr '\n' ' ')
	is "65534 /dev/console " "$out" "as nobody: tty names the terminal"
	nid=$(as_nobody "'$CORDON' run --detach -t -- bash --norc" </dev/null)
	tm -f /dev/null new-session -d -x 100 -y 30 -s n "$nb_env '$CORDON' attach $nid; $after"
	wait_for n 'bash-[0-9.]+[#$] ?$'
	type_wait n 'echo NB=$(id -u) $(tty)' '^NB=65534 /dev/console$'
	ok $? "as nobody: run --detach -t, attach, type, see the output"
	tm send-keys -t n C-p C-q
	wait_for n '^CLI-EXIT=0$'
	ok $? "as nobody: Ctrl-P Ctrl-Q detaches"
	as_nobody "'$CORDON' ps" | grep -qE "^$nid +running"
	ok $? "as nobody: it runs on"
	as_nobody "'$CORDON' kill '$nid'" >/dev/null
	npid=$(head -n1 "$u/run/cordon/controller.sock.lock" 2>/dev/null)
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	for _ in $(seq 50); do [ -n "$npid" ] && kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
else
	for _ in 1 2 3 4; do na "needs root and setpriv to act as an ordinary user"; done
fi

done_testing

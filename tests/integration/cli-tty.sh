#!/usr/bin/env bash
# `cordon run` on a terminal, driven through tmux: the command gets a pseudo-terminal of its own
# as its controlling terminal (job control, ^C/^Z/^\ to its foreground job, the window size),
# this terminal is raw while it runs and restored however the CLI ends, and the exit status is
# the command's. Off a terminal nothing changes unless -t asks.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v tmux >/dev/null || skip_all "tmux is not installed (scripts/packages.txt)"
plan 23

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
out=$("$CORDON" run -t -- sh -c '[ -t 0 ] && [ -t 1 ] && echo tty; readlink /proc/self/fd/0' \
	</dev/null | tr -d '\r')
is "tty" "$(echo "$out" | head -n1)" "-t gives the command a terminal off a terminal too"
case "$(echo "$out" | sed -n 2p)" in /dev/pts/*) r=0 ;; *) r=1 ;; esac
ok $r "the terminal is a pty slave ($(echo "$out" | sed -n 2p))"
"$CORDON" exec -t -- true 2>/dev/null
is 125 $? "exec -t is a usage error (exec has no terminal)"
"$CORDON" run --detach -t -- true 2>/dev/null
is 125 $? "run --detach -t is a usage error"

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

done_testing

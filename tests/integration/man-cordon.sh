#!/usr/bin/env bash
# cordon(1) documents every command and every flag the CLI accepts, and renders cleanly.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

page="$top_srcdir/docs/man/cordon.1"
[ -x "$CORDON" ] || skip_all "cordon not built"
command -v man >/dev/null || skip_all "man (man-db) missing"

flags=$( { "$CORDON" --help; "$CORDON" run --help; "$CORDON" kill --help; "$CORDON" events --help; } |
	grep -oE -- '--[a-z][a-z-]+' | sort -u)
cmds=$("$CORDON" --help | awk '/^Commands:/ {on=1; next} on && !NF {exit} on {print $1}')
plan $(($(echo "$flags" | wc -l) + $(echo "$cmds" | wc -l) + 1))

# In troff source a dash is written "\-": compare against the rendered text.
text=$(MANWIDTH=200 man -l "$page" 2>/dev/null)
for f in $flags; do
	echo "$text" | grep -qF -- "$f"
	ok $? "flag $f is documented"
done
for c in $cmds; do
	echo "$text" | grep -qE "^ +$c( |$)"
	ok $? "command $c is documented"
done
warn=$(man --warnings -l "$page" 2>&1 >/dev/null)
[ -z "$warn" ]
ok $? "the page renders without warnings${warn:+: $warn}"
done_testing

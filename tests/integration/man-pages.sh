#!/bin/sh
# The man pages: cordon-controller(8), cordon-launcherd(8), cordon-policy(5) and
# cordon-launcherd.json(5) (and cordon(1), whose flags man-cordon.sh checks) render with
# `man --warnings -l` without a word on stderr; every option of `cordon-controller --help` and
# `cordon-launcherd --help` appears in its page; every policy field (the keys of the default
# policy in policy/policy-default.c and the field tables of docs/POLICY.md) appears in
# cordon-policy(5), which must be docs/POLICY.md as docs/man/md2man.py renders it; every key
# launcherd-floor.c accepts (and every "require" layer and network level) appears in
# cordon-launcherd.json(5).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/integration/tap-lib.sh"


command -v man >/dev/null 2>&1 || skip_all "man not found (Debian: man-db)"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found"
for b in cordon-controller cordon-launcherd; do
	[ -x "$top_builddir/$b" ] || skip_all "$b not built (make)"
done

man_dir="$top_srcdir/docs/man"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Rendered text on one very long line per paragraph, with hyphenation at line ends undone, so
# that a name is found whether or not troff broke it.
render() {
	MANWIDTH=1000 man -l "$1" 2>/dev/null |
		python3 -c 'import re,sys; sys.stdout.write(re.sub("\u2010\n *", "", sys.stdin.read()))'
}
for p in cordon-controller.8 cordon-launcherd.8 cordon-policy.5 cordon-launcherd.json.5; do
	render "$man_dir/$p" >"$tmp/$p.txt"
done

options() { # binary: every --long option (and -h) its --help names
	"$1" --help 2>&1 | grep -oE -- '(^|[ ,])(--[a-z][a-z-]*|-[a-zA-Z])\b' | sed 's/^[ ,]*//' | sort -u
}
options "$top_builddir/cordon-controller" >"$tmp/controller.opts"
options "$top_builddir/cordon-launcherd" >"$tmp/launcherd.opts"

# Policy fields: every key of the default policy (at any depth), and the first column of every
# "field" table in docs/POLICY.md.
python3 - "$top_srcdir/policy/policy-default.c" "$top_srcdir/docs/POLICY.md" >"$tmp/policy.fields" <<'PY'
import json, re, sys
src = open(sys.argv[1]).read()
body = src.split("policy_default_json[] =", 1)[1].split(";", 1)[0]
text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
text = text.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
names = set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            names.add(k)
            walk(x)
walk(json.loads(text))
table = None
for line in open(sys.argv[2], encoding="utf-8"):
    if line.startswith("|"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if table is None:
            table = cells[0] == "field"
        elif table:
            m = re.fullmatch(r"`([A-Za-z]+)`", cells[0])
            if m:
                names.add(m.group(1))
    else:
        table = None
print("\n".join(sorted(names)))
PY

# Floor fields: the key tables of parse_floor() and the values it accepts.
floor_c="$top_srcdir/launcherd/launcherd-floor.c"
{
	sed -n '/static int parse_floor/,/^}/p' "$floor_c" |
		sed -n '/keys\[\] = {/,/};/p' | grep -oE '"[A-Za-z]+"' | tr -d '"'
	sed -n '/static int parse_floor/,/^}/p' "$floor_c" |
		grep -oE 'streq\(require\[i\], "[a-z]+"\)' | grep -oE '"[a-z]+"' | tr -d '"'
	echo none loopback proxy host | tr ' ' '\n'
} | sort -u >"$tmp/floor.fields"

pages="cordon.1 cordon-controller.8 cordon-launcherd.8 cordon-policy.5 cordon-launcherd.json.5"
count() { wc -l <"$1" | tr -d ' '; }
echo "1..$((5 + 4 + $(count "$tmp/controller.opts") + $(count "$tmp/launcherd.opts") + \
	$(count "$tmp/policy.fields") + $(count "$tmp/floor.fields") + 2))"

for p in $pages; do
	warn=$(man --warnings -l "$man_dir/$p" 2>&1 >/dev/null)
	[ -z "$warn" ]
	ok $? "$p renders without warnings"
	[ -z "$warn" ] || diag "$warn"
done

for p in cordon-controller.8 cordon-launcherd.8 cordon-launcherd.json.5 cordon-policy.5; do
	missing=""
	case $p in
	cordon-policy.5) want="NAME SYNOPSIS DESCRIPTION EXIT.STATUS SEE.ALSO" ;;
	*) want="NAME SYNOPSIS DESCRIPTION EXIT.STATUS ENVIRONMENT FILES SEE.ALSO" ;;
	esac
	for s in $want; do
		grep -qE "^$s\$" "$tmp/$p.txt" || missing="$missing $s"
	done
	[ -z "$missing" ]
	ok $? "$p has the sections $want"
	[ -z "$missing" ] || diag "missing:$missing"
done

while read -r o; do
	grep -qF -- "$o" "$tmp/cordon-controller.8.txt"
	ok $? "cordon-controller(8) documents $o"
done <"$tmp/controller.opts"
while read -r o; do
	grep -qF -- "$o" "$tmp/cordon-launcherd.8.txt"
	ok $? "cordon-launcherd(8) documents $o"
done <"$tmp/launcherd.opts"
while read -r f; do
	grep -qw -- "$f" "$tmp/cordon-policy.5.txt"
	ok $? "cordon-policy(5) documents the policy field $f"
done <"$tmp/policy.fields"
while read -r f; do
	grep -qw -- "$f" "$tmp/cordon-launcherd.json.5.txt"
	ok $? "cordon-launcherd.json(5) documents the floor's $f"
done <"$tmp/floor.fields"

# One source of truth: the committed cordon-policy.5 is docs/POLICY.md rendered.
th=$(sed -n 's/^\.TH [^ ]* [0-9] "\([^"]*\)" "\([^"]*\)".*/\1|\2/p' "$man_dir/cordon-policy.5")
python3 "$man_dir/md2man.py" --date "${th%%|*}" --source "${th#*|}" "$top_srcdir/docs/POLICY.md" \
	>"$tmp/cordon-policy.5" && cmp -s "$tmp/cordon-policy.5" "$man_dir/cordon-policy.5"
ok $? "docs/man/cordon-policy.5 is docs/POLICY.md rendered by md2man.py (else: make update-man)"

# The default admin floor installed by make install is what the page says it is.
python3 - "$top_srcdir/etc/launcherd.json" "$man_dir/cordon-launcherd.json.5" <<'PY'
import json, re, sys
shipped = json.load(open(sys.argv[1]))
page = open(sys.argv[2]).read()
m = re.search(r"\.SH THE INSTALLED DEFAULT.*?\.nf\n(.*?)\.fi", page, re.S)
sys.exit(0 if m and json.loads(m.group(1).replace("\\-", "-")) == shipped else 1)
PY
ok $? "cordon-launcherd.json(5) shows exactly the shipped etc/launcherd.json"

done_testing

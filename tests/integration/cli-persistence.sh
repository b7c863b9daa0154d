#!/usr/bin/env bash
# No escape by persistence: what a sandbox writes in its workspace must not run later on the host.
# For each host-executed path of the default policy (docs/POLICY.md, HOST-EXECUTED PATHS): a
# sandboxed write fails, and the host-side action that would run it (git status with
# core.fsmonitor, git commit with a hook, ...) runs nothing of the sandbox's; the same attack
# with the entry opted out (filesystem.hostExecuted.allow) does run, so each check can fail.
# Ordinary sandboxed git work (add, commit, checkout -b, stash) still works; git commands that
# write .git/config fail without damage. A workspace that is the home directory is refused
# (exit 120). Run as root (privileged launcher) and as an ordinary user (user-mode launcher).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v git >/dev/null || skip_all "needs git"

# A minimal, fixed environment for the host side: nothing of the caller's git configuration.
HOST_PATH=/usr/local/bin:/usr/bin:/bin
export GIT_CONFIG_NOSYSTEM=1

# suite WHO BASE: every check, with cordon and the host-side commands run as WHO (root: as
# ourselves; nobody: setpriv), in directories below BASE owned by WHO.
as() { # as COMMAND...: run as the suite's user, in the current directory
	if [ "$WHO" = root ]; then
		env HOME="$HOST_HOME" PATH="$HOST_PATH" XDG_RUNTIME_DIR="$RUNDIR" \
			XDG_STATE_HOME="$STATEDIR" "$@"
	else
		setpriv --reuid=65534 --regid=65534 --clear-groups env -i HOME="$HOST_HOME" \
			PATH="$HOST_PATH" GIT_CONFIG_NOSYSTEM=1 XDG_RUNTIME_DIR="$RUNDIR" \
			XDG_STATE_HOME="$STATEDIR" CORDON_CONTROLLER="$CORDON_CONTROLLER" \
			CORDON_LAUNCHERD="$CORDON_LAUNCHERD" \
			CORDON_LAUNCHERD_SOCKET="$CORDON_LAUNCHERD_SOCKET" "$@"
	fi
}
crun() { as "$CORDON" run "$@"; }   # cordon run, as the suite's user
hgit() { as git "$@"; }             # git on the host, as the suite's user

# A fresh clone with an identity, at $BASE/NAME; prints nothing. The origin has one commit.
fresh() {
	(cd "$BASE" && as git clone -q origin "$1" && cd "$1" &&
		as git config user.name tester && as git config user.email tester@example.invalid)
}

# attack NAME POLICY PAYLOAD: run PAYLOAD (sh -c) in a sandbox in $BASE/NAME with POLICY ("" for
# the default); its exit status is the payload's.
attack() {
	local dir="$BASE/$1" pol="$2"
	shift 2
	if [ -n "$pol" ]; then
		(cd "$dir" && crun --policy "$pol" -- /bin/sh -c "$1")
	else
		(cd "$dir" && crun -- /bin/sh -c "$1")
	fi
}

# The payload's host command: leaves a file behind when the host runs it.
ran() { [ -e "$BASE/ran-$1" ]; }
payload() { printf 'touch %s/ran-%s; false' "$BASE" "$1"; }

policy_allow() { # policy_allow FILE ENTRY [WRITE]: the default opting out of ENTRY
	local w=""
	[ -n "${3:-}" ] && w=", \"write\": [\"$3\"]"
	printf '{"version": 1, "filesystem": {"hostExecuted": {"allow": ["%s"]}%s}}\n' "$2" "$w" >"$1"
	chmod 0644 "$1"
}

suite() {
	WHO=$1 BASE=$2
	HOST_HOME="$BASE/home" RUNDIR="$BASE/run" STATEDIR="$BASE/state"
	# root uses the controller cli-lib.sh stops at the end; nobody one of its own
	[ "$WHO" = root ] && RUNDIR=$XDG_RUNTIME_DIR STATEDIR=$XDG_STATE_HOME
	mkdir -p "$BASE" "$HOST_HOME" "$RUNDIR" "$STATEDIR"
	chmod 0700 "$RUNDIR"
	[ "$WHO" = root ] || chown -R 65534:65534 "$BASE"
	(cd "$BASE" && as git init -q -b main origin && cd origin &&
		as git -c user.name=o -c user.email=o@example.invalid commit -q --allow-empty -m init)

	# 1. .git/config: git runs what core.fsmonitor names at the next git status.
	fresh cfg && cp "$BASE/cfg/.git/config" "$BASE/cfg.config"
	attack cfg "" "printf '[core]\n\tfsmonitor = \"$(payload cfg)\"\n' >>.git/config" 2>/dev/null
	ok $(($? == 0)) "$WHO: a sandboxed write to .git/config fails"
	(cd "$BASE/cfg" && hgit status >/dev/null 2>&1)
	! ran cfg && cmp -s "$BASE/cfg/.git/config" "$BASE/cfg.config"
	ok $? "$WHO: …and git status on the host runs nothing of the sandbox's"
	policy_allow "$BASE/p-config.json" .git/config
	attack cfg "$BASE/p-config.json" \
		"printf '[core]\n\tfsmonitor = \"$(payload cfg)\"\n' >>.git/config"
	(cd "$BASE/cfg" && hgit status >/dev/null 2>&1)
	ran cfg
	ok $? "$WHO: with .git/config opted out, the same attack runs on the host (the check can fail)"

	# The git directory cannot be swapped for one of the sandbox's: renaming it fails, and
	# removing it (the sandbox may destroy its workspace) leaves what is protected in place.
	fresh swap && cp "$BASE/swap/.git/config" "$BASE/swap.config"
	hooks_before=$(ls -A "$BASE/swap/.git/hooks")
	attack swap "" 'mv .git .git.old' >/dev/null 2>&1
	ok $(($? == 0)) "$WHO: .git cannot be renamed"
	attack swap "" 'rm -rf .git; mkdir -p .git/hooks; echo x >.git/config' >/dev/null 2>&1
	[ ! -e "$BASE/swap/.git.old" ] && cmp -s "$BASE/swap/.git/config" "$BASE/swap.config" &&
		[ "$(ls -A "$BASE/swap/.git/hooks")" = "$hooks_before" ]
	ok $? "$WHO: …and removing it leaves its config and hooks as they were"

	# 2. .git/hooks: git commit runs pre-commit.
	fresh hooks
	attack hooks "" "printf '#!/bin/sh\n$(payload hooks)\n' >.git/hooks/pre-commit &&
		chmod +x .git/hooks/pre-commit" 2>/dev/null
	ok $(($? == 0)) "$WHO: a sandboxed hook cannot be planted"
	(cd "$BASE/hooks" && hgit commit -q --allow-empty -m host >/dev/null 2>&1)
	! ran hooks
	ok $? "$WHO: …and git commit on the host runs none"
	rm -rf "$BASE/hooks/.git/hooks"
	attack hooks "" 'touch .git/hooks/pre-commit' 2>/dev/null
	ok $(($? == 0)) "$WHO: a missing .git/hooks is made empty and read-only, not creatable"
	[ -d "$BASE/hooks/.git/hooks" ] && [ -z "$(ls -A "$BASE/hooks/.git/hooks")" ]
	ok $? "$WHO: …it is an empty directory on the host"
	policy_allow "$BASE/p-hooks.json" .git/hooks
	attack hooks "$BASE/p-hooks.json" "printf '#!/bin/sh\ntouch $BASE/ran-hooks\n' \
		>.git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
	(cd "$BASE/hooks" && hgit commit -q --allow-empty -m host >/dev/null 2>&1)
	ran hooks
	ok $? "$WHO: with .git/hooks opted out, git commit runs the planted hook"

	# 3. .git/info: excludes hide the sandbox's files from git status.
	fresh info
	attack info "" 'echo x >planted && echo planted >>.git/info/exclude' 2>/dev/null
	ok $(($? == 0)) "$WHO: .git/info/exclude cannot be written"
	(cd "$BASE/info" && hgit status --porcelain) | grep -q '^?? planted$'
	ok $? "$WHO: …so git status on the host shows the file the sandbox made"

	# 4. A submodule's git directory (.git/modules/sub): git status runs git in it.
	(cd "$BASE" && as git init -q -b main subrepo && cd subrepo &&
		as git -c user.name=o -c user.email=o@example.invalid commit -q --allow-empty -m s)
	fresh super
	(cd "$BASE/super" && as git -c protocol.file.allow=always submodule add -q ../subrepo sub &&
		as git commit -q -m sub) >/dev/null 2>&1
	[ -f "$BASE/super/.git/modules/sub/config" ]
	ok $? "$WHO: (a repository with a submodule)"
	attack super "" "printf '[core]\n\tfsmonitor = \"$(payload super)\"\n' \
		>>.git/modules/sub/config" 2>/dev/null
	ok $(($? == 0)) "$WHO: a submodule's config cannot be written"
	(cd "$BASE/super" && hgit status >/dev/null 2>&1 && hgit -C sub status >/dev/null 2>&1)
	! ran super
	ok $? "$WHO: …and git status (in the superproject and the submodule) runs nothing"
	policy_allow "$BASE/p-modules.json" .git/modules
	attack super "$BASE/p-modules.json" "printf '[core]\n\tfsmonitor = \"$(payload super)\"\n' \
		>>.git/modules/sub/config"
	(cd "$BASE/super" && hgit -C sub status >/dev/null 2>&1)
	ran super
	ok $? "$WHO: with .git/modules opted out, it runs"

	# 5. A linked worktree as the workspace, its repository writable too: the common
	# directory's config and the pointers that lead there.
	fresh main
	(cd "$BASE/main" && as git worktree add -q ../wt -b wt) >/dev/null 2>&1
	printf '{"version": 1, "filesystem": {"write": ["%s"]}}\n' "$BASE/main" >"$BASE/p-wt.json"
	chmod 0644 "$BASE/p-wt.json"
	attack wt "$BASE/p-wt.json" "printf '[core]\n\tfsmonitor = \"$(payload wt)\"\n' \
		>>$BASE/main/.git/config" 2>/dev/null
	ok $(($? == 0)) "$WHO: in a linked worktree, the repository's config cannot be written"
	attack wt "$BASE/p-wt.json" "echo gitdir: /tmp >.git" 2>/dev/null
	ok $(($? == 0)) "$WHO: …nor the worktree's .git file"
	attack wt "$BASE/p-wt.json" "echo /tmp >$BASE/main/.git/worktrees/wt/commondir" 2>/dev/null
	ok $(($? == 0)) "$WHO: …nor its commondir"
	(cd "$BASE/wt" && hgit status >/dev/null 2>&1)
	! ran wt
	ok $? "$WHO: …and git status in the worktree runs nothing"
	policy_allow "$BASE/p-wt2.json" .git/config "$BASE/main"
	attack wt "$BASE/p-wt2.json" "printf '[core]\n\tfsmonitor = \"$(payload wt)\"\n' \
		>>$BASE/main/.git/config"
	(cd "$BASE/wt" && hgit status >/dev/null 2>&1)
	ran wt
	ok $? "$WHO: with .git/config opted out, it runs"

	# 6. A file the configuration includes (include.path), in the workspace.
	fresh inc
	(cd "$BASE/inc" && as git config include.path ../team.gitconfig && as touch team.gitconfig)
	attack inc "" "printf '[core]\n\tfsmonitor = \"$(payload inc)\"\n' >>team.gitconfig" \
		2>/dev/null
	ok $(($? == 0)) "$WHO: a file .git/config includes cannot be written"
	(cd "$BASE/inc" && hgit status >/dev/null 2>&1)
	! ran inc
	ok $? "$WHO: …and git status runs nothing"
	policy_allow "$BASE/p-inc.json" include.path
	attack inc "$BASE/p-inc.json" \
		"printf '[core]\n\tfsmonitor = \"$(payload inc)\"\n' >>team.gitconfig"
	(cd "$BASE/inc" && hgit status >/dev/null 2>&1)
	ran inc
	ok $? "$WHO: with include.path opted out, it runs"

	# 7. core.hooksPath in the repository (as husky sets it); missing: made empty.
	fresh hp
	(cd "$BASE/hp" && as git config core.hooksPath .githooks)
	attack hp "" "printf '#!/bin/sh\n$(payload hp)\n' >.githooks/pre-commit &&
		chmod +x .githooks/pre-commit" 2>/dev/null
	ok $(($? == 0)) "$WHO: no hook can be planted in the core.hooksPath directory"
	[ -d "$BASE/hp/.githooks" ]
	ok $? "$WHO: …which cordon made (empty) to keep it read-only"
	(cd "$BASE/hp" && hgit commit -q --allow-empty -m host >/dev/null 2>&1)
	! ran hp
	ok $? "$WHO: …and git commit runs none"
	policy_allow "$BASE/p-hp.json" core.hooksPath
	attack hp "$BASE/p-hp.json" "printf '#!/bin/sh\ntouch $BASE/ran-hp\n' \
		>.githooks/pre-commit && chmod +x .githooks/pre-commit"
	(cd "$BASE/hp" && hgit commit -q --allow-empty -m host >/dev/null 2>&1)
	ran hp
	ok $? "$WHO: with core.hooksPath opted out, git commit runs it"

	# 8. The other tools' files: a write fails and the file is unchanged (direnv, when
	# installed, is asked what it would load).
	fresh tools
	tools=".envrc .env .vscode/settings.json .vscode/tasks.json .idea/workspace.xml
		.devcontainer/devcontainer.json .devcontainer.json .husky/pre-commit
		.pre-commit-config.yaml mise.toml .mise.toml mise.local.toml .mise.local.toml
		.mise/config.toml .config/mise.toml .config/mise/config.toml"
	(cd "$BASE/tools" && as mkdir -p .vscode .idea .devcontainer .husky .mise .config/mise &&
		for f in $tools; do
			echo "# original" | as tee "$f" >/dev/null
		done)
	for f in $tools; do
		attack tools "" "echo '$(payload tools)' >>$f" 2>/dev/null
		rc=$?
		[ $rc != 0 ] && [ "$(cat "$BASE/tools/$f")" = "# original" ]
		ok $? "$WHO: $f cannot be written (rc $rc) and is unchanged"
	done
	attack tools "" 'rm -rf .vscode; mv .envrc x' 2>/dev/null
	[ -f "$BASE/tools/.envrc" ] && [ -f "$BASE/tools/.vscode/settings.json" ]
	ok $? "$WHO: nor removed or renamed"
	if command -v direnv >/dev/null; then
		(cd "$BASE/tools" && as direnv allow . && as direnv exec . true) >/dev/null 2>&1
		! ran tools
		ok $? "$WHO: direnv runs nothing of the sandbox's"
	else
		na "direnv is not installed (the file's content was checked)"
	fi
	policy_allow "$BASE/p-envrc.json" .envrc
	attack tools "$BASE/p-envrc.json" "echo '$(payload tools)' >>.envrc"
	[ "$(cat "$BASE/tools/.envrc")" != "# original" ]
	ok $? "$WHO: with .envrc opted out, the sandbox changes it"

	# 9. What cannot be kept read-only is refused or reported.
	fresh sym
	(cd "$BASE/sym" && as touch ../outside.envrc && as ln -s ../outside.envrc .envrc)
	out=$(attack sym "" true 2>&1)
	rc=$?
	[ $rc = 120 ] && echo "$out" | grep -q 'filesystem.hostExecuted.allow'
	ok $? "$WHO: a symlinked .envrc is refused, naming the way out (rc $rc: $out)"
	(cd "$BASE/hooks" && as "$CORDON" policy explain) >"$BASE/explain.txt" 2>&1
	grep -q 'host-executed paths that do not exist now  \[unprotected\]' "$BASE/explain.txt" &&
		grep -q '\.envrc .env' "$BASE/explain.txt" &&
		grep -q 'filesystem.hostExecuted ".git/config": ".*" kept read-only' "$BASE/explain.txt"
	ok $? "$WHO: policy explain says how each is kept, and which could be created"
	# …and one the sandbox creates is reported when the command ends (CLI warning, event).
	out=$(attack hooks "" 'echo "touch /tmp/x" >.envrc' 2>&1)
	rc=$?
	[ $rc = 0 ] && echo "$out" | grep -q 'warning: ".*/hooks/.envrc" did not exist'
	ok $? "$WHO: a created .envrc is reported by cordon run (rc $rc: $out)"
	(cd "$BASE/hooks" && as "$CORDON" events) 2>/dev/null |
		grep '"type":"host-executed-created"' | grep -q 'hooks/.envrc'
	ok $? "$WHO: …and in the event stream"
	out=$(attack hooks "" 'true' 2>&1)
	! echo "$out" | grep -q warning
	ok $? "$WHO: an .envrc there already is not reported again ($out)"
	as rm -f "$BASE/hooks/.envrc"

	# 10. Ordinary work: add, commit, branch, stash; git commands that write the config fail
	# without touching it.
	fresh work
	(cd "$BASE/work" && as git update-ref refs/remotes/origin/main HEAD)
	cp "$BASE/work/.git/config" "$BASE/work.config"
	out=$(attack work "" 'echo hi >f && git add f && git commit -q -m sandboxed &&
		git checkout -q -b feature && echo more >>f && git stash -q && git stash list &&
		git log --oneline | wc -l' 2>&1)
	rc=$?
	is "0" "$rc" "$WHO: git add, commit, checkout -b and stash work in the sandbox ($out)"
	[ "$(cd "$BASE/work" && hgit log -1 --format=%s main)" = sandboxed ] &&
		[ "$(cd "$BASE/work" && hgit stash list | wc -l)" = 1 ]
	ok $? "$WHO: …and the host sees the commit and the stash"
	out=$(attack work "" 'git config user.name someone' 2>&1)
	rc=$?
	[ $rc != 0 ] && echo "$out" | grep -q 'could not write config file'
	ok $? "$WHO: git config fails clearly (rc $rc: $out)"
	out=$(attack work "" 'git checkout -q -b tracking origin/main' 2>&1)
	echo "$out" | grep -q 'could not write config file' &&
		cmp -s "$BASE/work/.git/config" "$BASE/work.config" &&
		[ ! -e "$BASE/work/.git/config.lock" ]
	ok $? "$WHO: checkout -b with tracking: the branch, no tracking, the config untouched"
	out=$(attack work "" 'git init -q nested && git -C nested config x.y 1 &&
		git -C nested config x.y' 2>&1)
	is 1 "$out" "$WHO: a repository the sandbox makes inside the workspace is its own"
}

# As root: the controller starts a privileged launcher of its own.
suite root "$TEST_TMP/as-root"

# The home directory (or a directory that contains it) is refused as the workspace, with a hint.
if [ "$(id -u)" = 0 ] && [ -d /root ] && [ "$(getent passwd 0 | cut -d: -f6)" = /root ]; then
	out=$(cd /root && "$CORDON" run -- /bin/sh -c 'echo ran' 2>&1)
	rc=$?
	is 120 "$rc" "root: cordon run from ~ is refused (exit 120)"
	echo "$out" | grep -q 'is your home directory or contains it' &&
		echo "$out" | grep -q 'filesystem.workspace.allowHome' && ! echo "$out" | grep -q '^ran'
	ok $? "root: …with the hint, and nothing ran: $out"
	out=$(cd "$TEST_TMP" && "$CORDON" run --workspace /root -- /bin/true 2>&1)
	is 120 "$?" "root: so is --workspace ~ ($out)"
	echo '{"version": 1, "filesystem": {"workspace": {"access": "read-only", "allowHome": true}}}' \
		>"$TEST_TMP/home.json"
	out=$(cd /root && "$CORDON" run --policy "$TEST_TMP/home.json" -- /bin/sh -c 'echo ran' 2>&1)
	is "ran" "$out" "root: a policy can allow it (filesystem.workspace.allowHome)"
else
	na "needs root, whose home is /root"
	na "(idem)"
	na "(idem)"
	na "(idem)"
fi

# As an ordinary user (nobody): the controller starts a user-mode launcher.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	suite nobody "$TEST_TMP/as-nobody"
	npid=$(head -n1 "$TEST_TMP/as-nobody/run/cordon/controller.sock.lock" 2>/dev/null)
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	for _ in $(seq 50); do [ -n "$npid" ] && kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
else
	na "needs root and setpriv to act as an ordinary user"
fi
# (The ordinary user's home, /nonexistent, cannot be a workspace: checked as root above.)

echo "1..$TAP_N"
done_testing

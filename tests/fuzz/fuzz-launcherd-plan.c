/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * launcherd's spawn plan reader (launcherd/launcherd-plan.c): the only code of the privileged
 * daemon that reads a document the requester wrote. The first byte is how many fds came with the
 * message, modulo IPC_MAX_FDS + 1 (so a seed that starts with 'A' carries none, 'B' one, 'H'
 * seven, '@' sixty-four); the rest is the plan, parsed as launcher_answer_spawn() gets it (one
 * JSON object, duplicate keys refused, at most a frame's size) and handed to plan_parse().
 *
 * A refusal must name a field under "plan" and fit the error reply the daemon builds from it.
 * On a plan that parses: the invariants the rest of launcherd relies on (every fd index below
 * n_fds, every target normalized and not the root, every count within its limit), then what
 * dispatch runs on a parsed plan without touching an fd: floor_check_plan() against the built-in
 * floor, a floor that allows everything and one that requires everything (each verdict checked
 * against the fields), and landlock_unenforced() at every ABI. A broken invariant aborts (a crash
 * to the fuzzer, a failure to the corpus replay).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "ipc/ipc-fdpass.h"
#include "ipc/ipc-frame.h"
#include "ipc/ipc-json.h"
#include "launcherd/launcherd-floor.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-plan.h"
#include "tests/fuzz/fuzz.h"

static void check_fd_index(int k, size_t n_fds, bool required)
{
	check(k >= (required ? 0 : -1) && (k < 0 || (size_t)k < n_fds));
}

/* The error reply launcher_answer_spawn() sends (send_field_error(), conn_send_error()). */
static void check_refusal(int r, const struct field_error *fe)
{
	_cleanup_json_ json_t *m = NULL;
	char message[1024];

	check(r < 0);
	if (r == -ENOMEM)
		return;
	check(startswith(fe->field, "plan"));
	check(*fe->reason);
	(void)snprintf(message, sizeof(message), "%s%s%s", fe->field, *fe->field ? ": " : "",
		       fe->reason);
	m = json_pack("{s:s,s:I,s:s,s:i,s:s,s:s,s:s}", "type", "error", "seq", (json_int_t)1,
		      "code", "invalid-plan", "errno", -r, "field", fe->field, "step", "",
		      "message", message);
	check(m);
}

static void check_mount(const struct plan_mount *m, size_t n_fds)
{
	check(path_is_normalized(m->target) && !streq(m->target, "/") &&
	      strlen(m->target) < PATH_MAX);
	check_fd_index(m->source, n_fds, m->type == PLAN_MOUNT_BIND);
	check((m->type == PLAN_MOUNT_BIND) == (m->source >= 0));
	check((m->type == PLAN_MOUNT_SYMLINK) == !!m->link);
	if (m->link)
		check(!isempty(m->link) && strlen(m->link) < PATH_MAX);
	check(m->mode <= 07777);
	if (m->type == PLAN_MOUNT_TMPFS)
		check(m->size_bytes >= 4096 && m->size_bytes <= UINT64_C(1) << 40);
	if (m->type != PLAN_MOUNT_BIND)
		check(m->read_only && !m->optional);
}

static void check_plan(const struct plan *p, size_t n_fds)
{
	size_t n;

	n = strv_length(p->argv);
	check(n >= 1 && !isempty(p->argv[0]));
	check(p->envp);
	for (size_t i = 0; p->argv[i]; i++)
		check(strlen(p->argv[i]) <= PLAN_STRING_MAX);
	for (size_t i = 0; p->envp[i]; i++) {
		const char *eq = strchr(p->envp[i], '=');

		check(eq && eq != p->envp[i] && strlen(p->envp[i]) <= PLAN_STRING_MAX);
	}
	/* argv and envp as execve counts them fit in what the kernel takes */
	check(plan_arg_size(p->argv, p->envp) <= CORDON_ARG_MAX);
	check(p->cwd && path_is_normalized(p->cwd));
	check(!p->controlling_tty ||
	      (p->stdio[0] >= 0 && p->stdio[1] == p->stdio[0] && p->stdio[2] == p->stdio[0]));
	n = p->hostname ? strlen(p->hostname) : 0;
	check(n >= 1 && n <= PLAN_HOSTNAME_MAX);
	for (size_t i = 0; i < ELEMENTSOF(p->stdio); i++)
		check_fd_index(p->stdio[i], n_fds, false);

	check(p->n_mounts <= PLAN_MOUNTS_MAX && (p->n_mounts == 0 || p->mounts));
	for (size_t i = 0; i < p->n_mounts; i++)
		check_mount(&p->mounts[i], n_fds);

	if (!p->has_landlock)
		check(p->n_landlock_fs == 0 && !p->landlock_has_net && !p->landlock_scope);
	check(p->n_landlock_fs <= PLAN_LANDLOCK_RULES_MAX);
	for (size_t i = 0; i < p->n_landlock_fs; i++)
		check(path_is_normalized(p->landlock_fs[i].path) && p->landlock_fs[i].access &&
		      !(p->landlock_fs[i].access &
			~landlock_fs_rights_for_abi(LANDLOCK_ABI_KNOWN)));
	check(p->n_bind_tcp <= PLAN_PORTS_MAX && p->n_connect_tcp <= PLAN_PORTS_MAX);
	for (size_t i = 0; i < p->n_bind_tcp; i++)
		check(p->bind_tcp[i] >= 1);
	for (size_t i = 0; i < p->n_connect_tcp; i++)
		check(p->connect_tcp[i] >= 1);
	if (!p->landlock_has_net)
		check(p->n_bind_tcp == 0 && p->n_connect_tcp == 0);
	check(!(p->landlock_scope & ~(uint64_t)(CORDON_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET |
						CORDON_LANDLOCK_SCOPE_SIGNAL)));

	check_fd_index(p->mount_ns, n_fds, false);
	check_fd_index(p->seccomp_program, n_fds, false);
	if (p->seccomp_program < 0)
		check(!p->seccomp_kill);

	/* check_rlimits() indexes the requester's limits by resource and names it. */
	check(p->n_rlimits <= ELEMENTSOF(p->rlimits));
	for (size_t i = 0; i < p->n_rlimits; i++) {
		check(p->rlimits[i].resource >= 0 && p->rlimits[i].resource < RLIMIT_NLIMITS);
		check(!streq(plan_rlimit_name(p->rlimits[i].resource), "?"));
		check(p->rlimits[i].value <= INT64_MAX);
		for (size_t k = 0; k < i; k++)
			check(p->rlimits[k].resource != p->rlimits[i].resource);
	}

	check(p->pids_max <= PLAN_PIDS_MAX);
	check(p->memory_max == 0 ||
	      (p->memory_max >= PLAN_MEMORY_MIN && p->memory_max <= INT64_MAX));
	check(p->network <= PLAN_NETWORK_UNIX && !streq(plan_network_to_string(p->network), "?"));
	check(p->proxy_port >= 1);
	if (p->network != PLAN_NETWORK_PROXY)
		check(p->proxy_port == 3128);
	check(p->timeout_ms <= UINT64_C(1) << 40);
}

/* floor_check_plan() against floors whose verdict follows from the plan's fields alone. */
static void check_floors(const struct plan *p)
{
	const struct floor builtin = { .max_network = PLAN_NETWORK_PROXY, .max_sandboxes = 256 };
	const struct floor open = { .max_network = PLAN_NETWORK_HOST,
				    .host_mode = true,
				    .max_sandboxes = 256 };
	const struct floor strict = {
		.require_landlock = true,
		.require_seccomp = true,
		.require_netns = true,
		.max_network = PLAN_NETWORK_NONE,
		.max_sandboxes = 1,
		.pids_max = 1,
		.pids_max_required = true,
		.memory_max = PLAN_MEMORY_MIN,
	};
	struct field_error fe = { 0 };
	bool meets;
	int r;

	r = floor_check_plan(&builtin, p, &fe);
	check(r == (p->network != PLAN_NETWORK_HOST ? 0 : -EPERM));
	check(floor_check_plan(&open, p, &fe) == 0);

	meets = p->has_landlock && p->landlock_required && p->seccomp_program >= 0 &&
		plan_network_rank(p->network) <= plan_network_rank(PLAN_NETWORK_NONE) &&
		p->pids_max && p->memory_max;
	r = floor_check_plan(&strict, p, &fe);
	check(r == (meets ? 0 : -EPERM));
	if (r < 0)
		check(startswith(fe.field, "plan"));
}

/* What launcher_answer_spawn() reports as not enforced, at every ABI the code knows. */
static void check_unenforced(const struct plan *p)
{
	for (int abi = 0; abi <= LANDLOCK_ABI_KNOWN; abi++) {
		_cleanup_json_ json_t *a = json_array();

		if (!a)
			return;
		check(landlock_unenforced(p, abi, a) >= 0);
		if (!p->has_landlock || abi == LANDLOCK_ABI_KNOWN)
			check(json_array_size(a) == 0);
		else if (abi == 0)
			check(json_array_size(a) == 1);
		else
			check(json_array_size(a) <= p->n_landlock_fs + 2);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_json_ json_t *j = NULL;
	_cleanup_plan_ struct plan *p = NULL;
	struct field_error fe = { 0 };
	size_t n_fds;
	int r;

	if (size < 1 || size - 1 > IPC_FRAME_MEMFD_MAX)
		return 0;
	n_fds = data[0] % (IPC_MAX_FDS + 1);
	if (ipc_json_parse_object((const char *)data + 1, size - 1, &j, &fe) < 0)
		return 0;

	r = plan_parse(j, n_fds, &p, &fe);
	if (r < 0) {
		check(!p);
		check_refusal(r, &fe);
		return 0;
	}
	check(r == 0 && p);
	check_plan(p, n_fds);
	check_floors(p);
	check_unenforced(p);
	return 0;
}

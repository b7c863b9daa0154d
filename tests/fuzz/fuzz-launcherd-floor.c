/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * launcherd's admin floor reader (launcherd/launcherd-floor.c) on arbitrary bytes: what
 * floor_load() does with the text of /etc/cordon/launcherd.json once the file itself passed its
 * checks (root-owned, not group- or world-writable, at most FLOOR_FILE_MAX bytes): one JSON
 * object, duplicate keys refused, over the built-in defaults, released on failure.
 *
 * floor_parse() is that reader; the built-in defaults are what it makes of "{}".
 *
 * On a floor that parses: every value within the range the file format allows, floor_to_json()
 * (the floor as hello reports it) agrees with it, and floor_check_plan() passes the most confined
 * plan under every floor and decides a host-network plan by maxNetwork and require alone. A
 * broken invariant aborts (a crash to the fuzzer, a failure to the corpus replay).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "launcherd/launcherd-floor.h"
#include "launcherd/launcherd-plan.h"

#include "tests/fuzz/fuzz.h"

static void check_strv(char *const *l, size_t max_items, size_t max_len)
{
	size_t n = 0;

	for (; l && l[n]; n++)
		check(strlen(l[n]) <= max_len);
	check(n <= max_items);
}

/* The floor as hello reports it. */
static void check_report(const struct floor *f)
{
	_cleanup_json_ json_t *j = floor_to_json(f);
	json_t *req, *pu;
	size_t n;

	if (!j)
		return; /* out of memory */
	req = json_object_get(j, "require");
	n = (size_t)f->require_landlock + f->require_seccomp + f->require_netns;
	check(json_is_array(req) && json_array_size(req) == n);
	check(streq(json_string_value(json_object_get(j, "maxNetwork")),
		    plan_network_to_string(f->max_network)));
	check(json_is_true(json_object_get(j, "hostMode")) == f->host_mode);
	pu = json_object_get(j, "perUser");
	check(json_is_object(pu) &&
	      (uint64_t)json_integer_value(json_object_get(pu, "maxSandboxes")) ==
		      f->max_sandboxes &&
	      (uint64_t)json_integer_value(json_object_get(pu, "pidsMax")) == f->pids_max &&
	      (uint64_t)json_integer_value(json_object_get(pu, "memoryMaxBytes")) == f->memory_max);
}

/* Plans whose verdict under a floor follows from the floor's fields alone. */
static void check_plans(const struct floor *f)
{
	struct plan confined = {
		.has_landlock = true,
		.landlock_required = true,
		.seccomp_program = 0,
		.pids_max = 1,
		.memory_max = PLAN_MEMORY_MIN,
		.network = PLAN_NETWORK_UNIX,
	};
	struct plan host = confined;
	struct field_error fe = { 0 };
	int r;

	check(floor_check_plan(f, &confined, &fe) == 0);
	host.network = PLAN_NETWORK_HOST;
	r = floor_check_plan(f, &host, &fe);
	check(r == (!f->require_netns && f->max_network == PLAN_NETWORK_HOST ? 0 : -EPERM));
	if (r < 0)
		check(streq(fe.field, "plan.network"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct field_error fe = { 0 };
	struct floor f, defaults;

	if (floor_parse("{}", 2, &defaults, &fe) < 0)
		abort();
	floor_done(&defaults);
	/* floor_load() from here on, its file checks done. */
	if (floor_parse((const char *)data, size, &f, &fe) < 0) {
		check(size > FLOOR_FILE_MAX || *fe.reason);
		return 0;
	}

	check(f.max_network <= PLAN_NETWORK_UNIX);
	check(f.max_sandboxes >= 1 && f.max_sandboxes <= 1U << 20);
	check(f.pids_max <= PLAN_PIDS_MAX);
	/* A pids ceiling the file leaves out is the built-in one, and plans need not name it. */
	check(f.pids_max_required ? f.pids_max >= 1 : f.pids_max == defaults.pids_max);
	check(f.memory_max == 0 || (f.memory_max >= PLAN_MEMORY_MIN && f.memory_max <= INT64_MAX));
	check_strv(f.allow_users, 4096, 256);
	check_strv(f.allow_groups, 4096, 256);
	check_report(&f);
	check_plans(&f);
	floor_done(&f);
	check(!f.allow_users && !f.allow_groups);
	return 0;
}

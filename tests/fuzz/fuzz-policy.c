/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policy reader on arbitrary bytes, then invariants on whatever parses: the effective
 * policy round-trips through policy_to_json(), a policy narrows itself, the default narrows to
 * nothing wider than it says, and explain runs. A broken invariant aborts (a crash to the
 * fuzzer, a failure to the corpus replay).
 */
#include "config.h"

#include <stdlib.h>

#include "common/json-cleanup.h"
#include "policy/policy-explain.h"
#include "policy/policy-narrow.h"
#include "policy/policy-parse.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_policy_ struct policy *p = NULL, *q = NULL;
	_cleanup_json_ json_t *j1 = NULL, *j2 = NULL, *x = NULL;
	struct field_error err;
	struct compile_ctx ctx = {
		.cwd = "/home/u/proj",
		.home = "/home/u",
		.caps = { .landlock_abi = 4,
			  .seccomp = true,
			  .cgroup = POLICY_CGROUP_V1,
			  .floor_max_network = POLICY_NETWORK_HOST },
		.mem_total = 1ULL << 32,
	};

	if (size > POLICY_FILE_MAX)
		return 0;
	if (policy_parse_string((const char *)data, size, &p, &err) < 0)
		return 0;
	if (policy_to_json(p, &j1) < 0)
		return 0; /* out of memory */
	if (policy_parse_json(j1, &q, &err) < 0 || policy_to_json(q, &j2) < 0 ||
	    !json_equal(j1, j2))
		abort();
	if (policy_narrow(p, p, &err) != 0)
		abort();
	(void)policy_explain(p, &ctx, &x);
	if (policy_resolve(q, &ctx, &err) == 0 && policy_narrow(q, q, &err) != 0)
		abort();
	return 0;
}

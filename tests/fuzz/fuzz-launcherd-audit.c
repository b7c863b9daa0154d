/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit record parser of launcherd's denial reader (launcherd/launcherd-audit-record.c) on
 * arbitrary bytes: the first byte picks the record type (Landlock access, Landlock domain,
 * seccomp, audit configuration change, or another: a SYSCALL record), the rest is the
 * record's text as the kernel would deliver it. The parser must stay within the bytes given,
 * and a record it accepts must hold its invariants: strings NUL-terminated within their
 * buffers, a Landlock record with a domain, a port within range, a seccomp record with a pid.
 * A broken invariant aborts.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launcherd/launcherd-audit-record.h"

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int types[] = { CORDON_AUDIT_LANDLOCK_ACCESS, CORDON_AUDIT_LANDLOCK_DOMAIN,
				     CORDON_AUDIT_SECCOMP, CORDON_AUDIT_CONFIG_CHANGE, 1300 };
	struct audit_record *r;
	char *text;
	int type, e;

	if (size < 1)
		return 0;
	type = types[data[0] % 5];
	/* A copy of exactly the text's size: reading past it is a sanitizer report. */
	text = malloc(size - 1 ? size - 1 : 1);
	r = malloc(sizeof(*r));
	if (!text || !r)
		abort();
	memcpy(text, data + 1, size - 1);
	e = audit_record_parse(type, text, size - 1, r);
	if (type == 1300)
		check(e == -ENOENT);
	else
		check(e == 0 || e == -EBADMSG);
	if (e == 0) {
		check(r->type == type);
		check(strnlen(r->blockers, sizeof(r->blockers)) < sizeof(r->blockers));
		check(strnlen(r->path, sizeof(r->path)) < sizeof(r->path));
		check(strnlen(r->addr, sizeof(r->addr)) < sizeof(r->addr));
		check(strnlen(r->comm, sizeof(r->comm)) < sizeof(r->comm));
		check(strnlen(r->exe, sizeof(r->exe)) < sizeof(r->exe));
		check(r->port >= -1 && r->port <= 65535);
		check(r->audit_enabled >= -1 && r->audit_enabled <= 2);
		if (type == CORDON_AUDIT_SECCOMP)
			check(r->pid > 0);
		else if (type == CORDON_AUDIT_CONFIG_CHANGE)
			check(r->domain == 0 && r->pid == 0);
		else
			check(r->domain != 0);
		if (type == CORDON_AUDIT_LANDLOCK_ACCESS)
			check(r->blockers[0] != 0);
		if (type == CORDON_AUDIT_LANDLOCK_DOMAIN)
			check(r->status != AUDIT_DOMAIN_NONE &&
			      (r->status != AUDIT_DOMAIN_ALLOCATED || r->pid > 0));
	} else if (e == -EBADMSG)
		check(r->type == 0); /* refused whole: nothing half-filled */
	free(text);
	free(r);
	return 0;
}

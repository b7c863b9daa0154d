/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's audit records that say a sandbox was refused something (docs/DENIALS.md), parsed
 * from their text as the audit multicast group delivers them: one netlink message per record,
 * its payload "audit(SECONDS.MILLIS:SERIAL): key=value key=value ...". Pure code, no state: the
 * unit test and the fuzz target run it on any bytes.
 *
 * Values are either bare (up to the next space), "quoted" (no escapes: the kernel quotes a
 * string only when it has no space, quote or control byte) or, for strings a process controls
 * (path, exe, comm, name), upper-case hex of the raw bytes. Decoded strings never contain NUL:
 * an abstract UNIX socket's name (a path whose first byte is NUL) is written "@name", '@' for
 * each NUL in it, as ss(8) does;
 * a record with a malformed header or an unexpected shape is -EBADMSG, never half-filled.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Record types (include/uapi/linux/audit.h; defined here as older headers lack the Landlock
 * ones). */
#define CORDON_AUDIT_CONFIG_CHANGE 1305
#define CORDON_AUDIT_SECCOMP 1326
#define CORDON_AUDIT_LANDLOCK_ACCESS 1423
#define CORDON_AUDIT_LANDLOCK_DOMAIN 1424

#define AUDIT_RECORD_PATH_MAX 4096
#define AUDIT_RECORD_BLOCKERS_MAX 256

enum audit_domain_status {
	AUDIT_DOMAIN_NONE,
	AUDIT_DOMAIN_ALLOCATED,	  /* first denial of a domain: who restricted itself to it */
	AUDIT_DOMAIN_DEALLOCATED, /* the domain is gone: how many denials it had */
};

struct audit_record {
	int type;
	uint64_t msec; /* the record's time, milliseconds since the epoch */
	uint32_t serial;

	/* CORDON_AUDIT_LANDLOCK_*: the domain (never 0) */
	uint64_t domain;
	/* ACCESS: "fs.read_file,fs.write_file", "net.connect_tcp", "scope.signal", as the kernel
	 * wrote them */
	char blockers[AUDIT_RECORD_BLOCKERS_MAX];
	/* ACCESS, filesystem: the object (for a make-* right, the directory it would be made
	 * in); empty when the record names none */
	char path[AUDIT_RECORD_PATH_MAX];
	/* ACCESS, network: the port (-1: none) and address ("" when the record names none) */
	int port;
	char addr[64];
	/* DOMAIN */
	enum audit_domain_status status;
	uint64_t denials; /* DEALLOCATED */

	/* DOMAIN ALLOCATED (the restricting process) and SECCOMP (the refused one): pid as in the
	 * initial pid namespace, uid */
	pid_t pid;
	uid_t uid;
	/* SECCOMP */
	uint32_t session; /* the audit session id; UINT32_MAX: unset */
	uint32_t arch;	  /* AUDIT_ARCH_* */
	int syscall;
	uint32_t code; /* the filter's action (SECCOMP_RET_*, without the data) */
	long sig;
	char comm[64];
	char exe[AUDIT_RECORD_PATH_MAX];

	/* CONFIG_CHANGE: the new audit_enabled (0, 1, 2 locked), -1 when the change is another */
	int audit_enabled;
};

/*
 * Parse one record of type type (the netlink message type) from text[0..len) (not necessarily
 * NUL-terminated). Returns 0, -EBADMSG for malformed text, -ENOENT for a type this file does
 * not parse (the caller ignores those).
 */
int audit_record_parse(int type, const char *text, size_t len, struct audit_record *ret);

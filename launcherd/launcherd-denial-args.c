/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <linux/audit.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "launcherd/launcherd-denial-args.h"

#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003eU
#endif
#ifndef AUDIT_ARCH_I386
#define AUDIT_ARCH_I386 0x40000003U
#endif
#ifndef AUDIT_ARCH_AARCH64
#define AUDIT_ARCH_AARCH64 0xc00000b7U
#endif
#ifndef AUDIT_ARCH_ARM
#define AUDIT_ARCH_ARM 0x40000028U
#endif

/* Above every architecture's highest system call number. x32's carry bit 30 (the floor
 * refuses them whole): reported without a name. */
#define DENIAL_NR_MAX 4096
#define DENIAL_X32_BIT 0x40000000

int denial_args_check(int32_t nr, uint32_t arch)
{
	static const uint32_t archs[] = {
#if defined(__x86_64__)
		AUDIT_ARCH_X86_64,
		AUDIT_ARCH_I386,
#elif defined(__aarch64__)
		AUDIT_ARCH_AARCH64,
		AUDIT_ARCH_ARM,
#endif
	};
	bool known = false;

	for (size_t i = 0; i < ELEMENTSOF(archs); i++)
		known = known || archs[i] == arch;
	if (!known || nr < 0)
		return -EINVAL;
#if defined(__x86_64__)
	if (arch == AUDIT_ARCH_X86_64)
		nr &= ~DENIAL_X32_BIT;
#endif
	if (nr >= DENIAL_NR_MAX)
		return -EINVAL;
	return 0;
}

static const char *const families[] = {
	"AF_UNSPEC",	 "AF_UNIX",	 "AF_INET",	"AF_AX25",  "AF_IPX",	  "AF_APPLETALK",
	"AF_NETROM",	 "AF_BRIDGE",	 "AF_ATMPVC",	"AF_X25",   "AF_INET6",	  "AF_ROSE",
	"AF_DECnet",	 "AF_NETBEUI",	 "AF_SECURITY", "AF_KEY",   "AF_NETLINK", "AF_PACKET",
	"AF_ASH",	 "AF_ECONET",	 "AF_ATMSVC",	"AF_RDS",   "AF_SNA",	  "AF_IRDA",
	"AF_PPPOX",	 "AF_WANPIPE",	 "AF_LLC",	"AF_IB",    "AF_MPLS",	  "AF_CAN",
	"AF_TIPC",	 "AF_BLUETOOTH", "AF_IUCV",	"AF_RXRPC", "AF_ISDN",	  "AF_PHONET",
	"AF_IEEE802154", "AF_CAIF",	 "AF_ALG",	"AF_NFC",   "AF_VSOCK",	  "AF_KCM",
	"AF_QIPCRTR",	 "AF_SMC",	 "AF_XDP",	"AF_MCTP",
};

const char *denial_family_name(uint64_t family)
{
	return family < ELEMENTSOF(families) ? families[family] : NULL;
}

static const char *socket_type_name(uint64_t type)
{
	static const char *const types[] = {
		[1] = "SOCK_STREAM",	[2] = "SOCK_DGRAM", [3] = "SOCK_RAW",	  [4] = "SOCK_RDM",
		[5] = "SOCK_SEQPACKET", [6] = "SOCK_DCCP",  [10] = "SOCK_PACKET",
	};

	type &= 0xf; /* SOCK_TYPE_MASK; the rest are flags */
	return type < ELEMENTSOF(types) ? types[type] : NULL;
}

static int set_family(json_t *o, uint64_t family)
{
	const char *n = denial_family_name(family & 0xffffffffU);
	char num[16];

	/* The kernel reads an int: the low 32 bits. */
	if (!n) {
		(void)snprintf(num, sizeof(num), "%u", (unsigned)(family & 0xffffffffU));
		n = num;
	}
	return json_object_set_new(o, "family", json_string(n));
}

static int set_hex(json_t *o, const char *key, uint64_t v)
{
	char num[24];

	(void)snprintf(num, sizeof(num), "0x%llx", (unsigned long long)v);
	return json_object_set_new(o, key, json_string(num));
}

/* The namespace flags the floor refuses (CLONE_NEWTIME, 0x80, for unshare() only: it is the
 * exit-signal byte of clone()). */
static int set_ns_flags(json_t *o, uint64_t flags, bool newtime)
{
	static const struct {
		uint64_t flag;
		const char *name;
	} ns[] = {
		{ 0x00020000, "CLONE_NEWNS" },	 { 0x02000000, "CLONE_NEWCGROUP" },
		{ 0x04000000, "CLONE_NEWUTS" },	 { 0x08000000, "CLONE_NEWIPC" },
		{ 0x10000000, "CLONE_NEWUSER" }, { 0x20000000, "CLONE_NEWPID" },
		{ 0x40000000, "CLONE_NEWNET" },	 { 0x00000080, "CLONE_NEWTIME" },
	};
	_cleanup_json_ json_t *a = json_array();

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(ns); i++)
		if ((flags & ns[i].flag) && (newtime || ns[i].flag != 0x80) &&
		    json_array_append_new(a, json_string(ns[i].name)) < 0)
			return -ENOMEM;
	return json_object_set_new(o, "flags", TAKE_PTR(a));
}

json_t *denial_args_json(const char *syscall, const uint64_t args[6])
{
	_cleanup_json_ json_t *o = json_object();
	int r = 0;

	if (!o)
		return NULL;
	if (!syscall)
		return TAKE_PTR(o);
	if (streq(syscall, "socket") || streq(syscall, "socketpair")) {
		const char *t = socket_type_name(args[1]);

		r = set_family(o, args[0]);
		if (r >= 0 && t)
			r = json_object_set_new(o, "socketType", json_string(t));
		/* An int too; a negative one is not a protocol any family has. */
		if (r >= 0 && (args[2] & 0xffffffffU) <= 0xffff)
			r = json_object_set_new(o, "protocol",
						json_integer((json_int_t)(args[2] & 0xffff)));
	} else if (streq(syscall, "clone"))
		r = set_ns_flags(o, args[0], false);
	else if (streq(syscall, "unshare"))
		r = set_ns_flags(o, args[0], true);
	else if (streq(syscall, "ioctl")) {
		/* An unsigned int: the low 32 bits. */
		uint64_t req = args[1] & 0xffffffffU;

		if (req == 0x5412)
			r = json_object_set_new(o, "request", json_string("TIOCSTI"));
		else if (req == 0x541c)
			r = json_object_set_new(o, "request", json_string("TIOCLINUX"));
		else
			r = set_hex(o, "request", req);
	} else if (streq(syscall, "personality"))
		r = set_hex(o, "persona", args[0] & 0xffffffffU);
	return r < 0 ? NULL : TAKE_PTR(o);
}

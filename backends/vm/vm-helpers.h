/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm's guest helpers (the exec agent, …), fetched on first use and verified. They are not
 * installed with cordon: each is looked for in DIR (<vmDir>/bin), reused when its sha256 matches
 * the pin compiled in (backends/vm/helper-pins.txt), and otherwise downloaded from BASE_URL/NAME
 * (libcurl: https, http, or file for an offline mirror) into a temporary file, hashed while it
 * streams (libsodium), fsync'd, and renamed into place 0755 only when its size and digest match.
 * A mismatch is deleted and refused, naming the helper and both digests. Two processes (or
 * threads) ensuring the same DIR take turns (flock on DIR). Blocking: a caller with an event
 * loop runs it in a thread or a child (the cordon-vm-helpers program).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The release mirror when none is set; distributions point the setting (or this, at build time:
 * make VM_HELPERS_BASE_URL=…) at their own. */
#ifndef VM_HELPERS_BASE_URL
#define VM_HELPERS_BASE_URL \
	"https://downloads.cordon.invalid/cordon-vm-helpers/" PACKAGE_VERSION "/"
#endif

struct vm_helper_pin {
	const char *name;
	const char *sha256; /* lowercase hex */
	uint64_t size;
};

/* The pinned helpers, sorted by name; NULL-terminated by a zero entry. */
extern const struct vm_helper_pin vm_helper_pins[];
const struct vm_helper_pin *vm_helper_pin(const char *name);

enum vm_helper_state {
	VM_HELPER_REUSED,   /* present and verified: nothing fetched */
	VM_HELPER_FETCHING, /* a download starts (done 0); total is the pinned size */
	VM_HELPER_PROGRESS, /* done of total bytes so far */
	VM_HELPER_FETCHED,  /* downloaded, verified and in place */
};

typedef void (*vm_helpers_progress_fn)(const char *name, enum vm_helper_state state, uint64_t done,
				       uint64_t total, void *userdata);

struct vm_helpers_opts {
	const char *dir;	  /* <vmDir>/bin, created (with its parents) when missing */
	const char *base_url;	  /* NULL or "": VM_HELPERS_BASE_URL; a '/' is added if missing */
	bool offline;		  /* never download: verify what is there */
	long connect_timeout_ms;  /* 0: 15 s */
	long low_speed_timeout_s; /* a transfer slower than 1 byte/s this long fails; 0: 30 s */
	long total_timeout_ms;	  /* per helper; 0: 10 min */
	vm_helpers_progress_fn progress; /* or NULL */
	void *userdata;
};

/*
 * Make sure each helper in names (NULL-terminated; NULL: every pinned one) is in o->dir and
 * matches its pin, fetching what is missing or wrong. 0; or a negative errno with err saying
 * why: -ENOENT an unknown helper (or, offline, a missing one), -EBADMSG a digest or size that does
 * not match (nothing is left in DIR), -EHOSTUNREACH / -ETIMEDOUT / -EIO a download that failed,
 * -EPROTONOSUPPORT a base URL of another scheme.
 */
int vm_helpers_ensure(const struct vm_helpers_opts *o, const char *const *names, char *err,
		      size_t err_size);

/*
 * Download url (https, http, file; a redirect keeps the scheme) into o->dir/name: at most
 * max_size bytes, hashed while it streams, renamed into place 0644 only when its sha256 is
 * sha256 (lowercase hex). o->base_url and o->offline are not used; o->progress gets name with
 * max_size as the total. 0, or a negative errno with err saying why: -EBADMSG a digest that
 * does not match or a file larger than max_size (nothing is left), -EHOSTUNREACH /
 * -ETIMEDOUT / -ENOENT / -EIO a download that failed, -EPROTONOSUPPORT another scheme.
 */
int vm_helpers_download(const struct vm_helpers_opts *o, const char *url, const char *name,
			const char *sha256, uint64_t max_size, char *err, size_t err_size);

/* The sha256 (lowercase hex, 65 bytes with the NUL) and size of the regular file name in the
 * directory dirfd (no symlink followed). 0, or a negative errno. */
int vm_helpers_digest_at(int dirfd, const char *name, char hex[65], uint64_t *ret_size);

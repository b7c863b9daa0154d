/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a guest kernel file is, for `cordon doctor`: whether it is an ELF64 x86-64 vmlinux with a
 * PVH entry (the ELF note "Xen", type XEN_ELFNOTE_PHYS32_ENTRY, that QEMU's microvm boots), and
 * its version (from the "Linux version " banner in it). The file is untrusted input.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct vm_kernel_info {
	bool elf;	  /* an ELF64 little-endian x86-64 file */
	bool pvh;	  /* with a PVH entry note */
	char version[65]; /* "" when no banner was found */
};

/* Inspect the len bytes at buf. Never fails: what is not found stays false / "". */
void vm_kernel_inspect_buf(const void *buf, size_t len, struct vm_kernel_info *ret);

/* The same on the file at path (mapped read-only). 0, or a negative errno. */
int vm_kernel_inspect(const char *path, struct vm_kernel_info *ret);

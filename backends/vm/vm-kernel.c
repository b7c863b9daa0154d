/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/vm/vm-kernel.h"
#include "common/cleanup.h"

#define XEN_ELFNOTE_PHYS32_ENTRY 18

/* Whether the notes in [off, off + size) of buf hold the PVH entry note. */
static bool notes_have_pvh(const unsigned char *buf, size_t len, uint64_t off, uint64_t size)
{
	uint64_t end;

	if (off > len || size > len - off)
		return false;
	end = off + size;
	while (end - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr n;
		uint64_t name_len, desc_len;

		memcpy(&n, buf + off, sizeof(n));
		off += sizeof(n);
		name_len = ((uint64_t)n.n_namesz + 3) & ~(uint64_t)3;
		desc_len = ((uint64_t)n.n_descsz + 3) & ~(uint64_t)3;
		if (name_len > end - off || desc_len > end - off - name_len)
			return false;
		if (n.n_type == XEN_ELFNOTE_PHYS32_ENTRY && n.n_namesz == 4 &&
		    memcmp(buf + off, "Xen", 4) == 0 && (n.n_descsz == 4 || n.n_descsz == 8))
			return true;
		off += name_len + desc_len;
	}
	return false;
}

static void find_version(const unsigned char *buf, size_t len, char *out, size_t size)
{
	static const char banner[] = "Linux version ";
	const unsigned char *p = buf, *end = buf + len;

	while ((p = memmem(p, (size_t)(end - p), banner, sizeof(banner) - 1))) {
		const unsigned char *v = p + sizeof(banner) - 1;
		size_t n = 0;

		/* The banner itself, not the format string ("Linux version %s ..."). */
		while (v + n < end && n + 1 < size && v[n] > ' ' && v[n] < 0x7f)
			n++;
		if (n > 0 && v[0] != '%' && v + n < end && v[n] == ' ') {
			memcpy(out, v, n);
			out[n] = '\0';
			return;
		}
		p = v;
	}
}

void vm_kernel_inspect_buf(const void *data, size_t len, struct vm_kernel_info *ret)
{
	const unsigned char *buf = data;
	Elf64_Ehdr eh;

	*ret = (struct vm_kernel_info){ 0 };
	find_version(buf, len, ret->version, sizeof(ret->version));
	if (len < sizeof(eh))
		return;
	memcpy(&eh, buf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
		return;
	ret->elf = true;
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > len ||
	    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
		return;
	for (unsigned i = 0; i < eh.e_phnum && !ret->pvh; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, buf + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_NOTE)
			ret->pvh = notes_have_pvh(buf, len, ph.p_offset, ph.p_filesz);
	}
}

int vm_kernel_inspect(const char *path, struct vm_kernel_info *ret)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	void *m;

	*ret = (struct vm_kernel_info){ 0 };
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size == 0)
		return 0;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	vm_kernel_inspect_buf(m, (size_t)st.st_size, ret);
	(void)munmap(m, (size_t)st.st_size);
	return 0;
}

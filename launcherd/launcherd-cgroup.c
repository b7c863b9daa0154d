/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "launcherd/launcherd-cgroup.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

const char *cgroup_kind_to_string(enum cgroup_kind k)
{
	switch (k) {
	case CGROUP_V1:
		return "v1";
	case CGROUP_V2:
		return "v2";
	default:
		return "none";
	}
}

/* Our own cgroup in one hierarchy, from /proc/self/cgroup: "4:memory:/x" or "0::/x" for v2. */
static char *own_cgroup(const char *controller)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;

	if (read_full_file("/proc/self/cgroup", 64 * 1024, &buf, NULL) < 0)
		return NULL;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2;

		if (!c1)
			continue;
		c2 = strchr(c1 + 1, ':');
		if (!c2)
			continue;
		*c2 = '\0';
		if (controller ? streq(c1 + 1, controller) : (c1[1] == '\0' && streq(line, "0:")))
			return strdup(c2 + 1);
		/* v1 lines may list several controllers: "3:cpu,cpuacct:/". */
		if (controller) {
			char *save2 = NULL;

			for (char *t = strtok_r(c1 + 1, ",", &save2); t;
			     t = strtok_r(NULL, ",", &save2))
				if (streq(t, controller))
					return strdup(c2 + 1);
		}
	}
	return NULL;
}

static int write_string_at(int dir, const char *file, const char *value)
{
	_cleanup_close_ int fd = openat(dir, file, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return loop_write(fd, value, strlen(value));
}

static int write_string(const char *dir, const char *file, const char *value)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", dir, file);

	return p ? write_string_at(AT_FDCWD, p, value) : -ENOMEM;
}

static bool file_has_word(const char *path, const char *word)
{
	_cleanup_free_ char *buf = NULL;

	if (read_full_file(path, 4096, &buf, NULL) < 0)
		return false;
	for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t;
	     t = strtok_r(NULL, " \n", &save))
		if (streq(t, word))
			return true;
	return false;
}

/* A base directory we can create children in: mkdir it, then check we can write into it. */
static char *make_base(const char *hierarchy, const char *own)
{
	_cleanup_free_ char *base = NULL;

	base = strdup_printf("%s%s/cordon", hierarchy, streq(own, "/") ? "" : own);
	if (!base)
		return NULL;
	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return NULL;
	if (access(base, W_OK) < 0)
		return NULL;
	return TAKE_PTR(base);
}

static bool probe_v2(struct cgroup_setup *s)
{
	_cleanup_free_ char *own = own_cgroup(NULL), *mnt = NULL, *sub = NULL;
	struct stat st;

	if (!own)
		return false;
	/* Pure v2 hosts mount it at /sys/fs/cgroup; hybrid hosts at /sys/fs/cgroup/unified. */
	if (stat(CGROUP_ROOT "/cgroup.controllers", &st) == 0)
		mnt = strdup_printf("%s%s", CGROUP_ROOT, streq(own, "/") ? "" : own);
	else
		mnt = strdup_printf("%s/unified%s", CGROUP_ROOT, streq(own, "/") ? "" : own);
	if (!mnt)
		return false;
	/* Delegated: our cgroup already passes pids and memory to its children. We never enable
	 * controllers ourselves (the no-internal-process rule makes that the unit's job). */
	sub = strdup_printf("%s/cgroup.subtree_control", mnt);
	if (!sub || !file_has_word(sub, "pids") || !file_has_word(sub, "memory"))
		return false;
	s->v2_base = strdup_printf("%s/cordon", mnt);
	if (!s->v2_base)
		return false;
	if ((mkdir(s->v2_base, 0755) < 0 && errno != EEXIST) ||
	    write_string(s->v2_base, "cgroup.subtree_control", "+pids +memory") < 0) {
		free(s->v2_base);
		s->v2_base = NULL;
		return false;
	}
	s->kind = CGROUP_V2;
	return true;
}

static bool probe_v1(struct cgroup_setup *s)
{
	_cleanup_free_ char *own_pids = own_cgroup("pids"), *own_mem = own_cgroup("memory");
	_cleanup_free_ char *memsw = NULL;

	if (!own_pids || !own_mem)
		return false;
	s->pids_base = make_base(CGROUP_ROOT "/pids", own_pids);
	s->memory_base = make_base(CGROUP_ROOT "/memory", own_mem);
	if (!s->pids_base || !s->memory_base) {
		free(s->pids_base);
		free(s->memory_base);
		s->pids_base = s->memory_base = NULL;
		return false;
	}
	memsw = strdup_printf("%s/memory.memsw.limit_in_bytes", s->memory_base);
	s->memsw = memsw && access(memsw, F_OK) == 0;
	s->kind = CGROUP_V1;
	return true;
}

void cgroup_setup_probe(struct cgroup_setup *ret)
{
	*ret = (struct cgroup_setup){ .kind = CGROUP_NONE };
	if (probe_v2(ret))
		return;
	(void)probe_v1(ret);
}

void cgroup_setup_done(struct cgroup_setup *s)
{
	free(s->v2_base);
	free(s->pids_base);
	free(s->memory_base);
	*s = (struct cgroup_setup){ .kind = CGROUP_NONE };
}

void sandbox_cgroup_init(struct sandbox_cgroup *cg)
{
	*cg = (struct sandbox_cgroup){ .events_fds = { -1, -1 } };
}

static int write_u64_at(int dir, const char *file, uint64_t value)
{
	char v[32];

	(void)snprintf(v, sizeof(v), "%llu", (unsigned long long)value);
	return write_string_at(dir, file, v);
}

/* mkdir base/id; its path and an O_PATH fd of it. */
static int create_one(const char *base, const char *id, char **ret_path, int *ret_dir)
{
	_cleanup_free_ char *path = strdup_printf("%s/%s", base, id);

	if (!path)
		return -ENOMEM;
	if (mkdir(path, 0755) < 0)
		return -errno;
	*ret_path = TAKE_PTR(path);
	*ret_dir = open(*ret_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return *ret_dir < 0 ? -errno : 0;
}

/* Move pid into the cgroup (its limits are in place already), and keep its events file open
 * for the exit report. */
static int attach(int dir, pid_t pid, const char *events, int *ret_events_fd, int *ret_procs)
{
	char v[16];
	int r;

	if (pid == 0) {
		*ret_procs = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		if (*ret_procs < 0)
			return -errno;
	} else {
		(void)snprintf(v, sizeof(v), "%d", (int)pid);
		r = write_string_at(dir, "cgroup.procs", v);
		if (r < 0)
			return r;
	}
	*ret_events_fd = openat(dir, events, O_RDONLY | O_CLOEXEC);
	return *ret_events_fd < 0 ? -errno : 0;
}

int sandbox_cgroup_create(const struct cgroup_setup *s, const char *id, uint64_t pids_max,
			  uint64_t memory_max, pid_t pid, struct sandbox_cgroup *cg,
			  int ret_procs[2])
{
	_cleanup_close_ int dir = -1, pids = -1, mem = -1; /* v2; v1 */
	int r;

	switch (s->kind) {
	case CGROUP_V2:
		r = create_one(s->v2_base, id, &cg->paths[0], &dir);
		if (r < 0)
			return r;
		if (pids_max && (r = write_u64_at(dir, "pids.max", pids_max)) < 0)
			return r;
		if (memory_max) {
			r = write_u64_at(dir, "memory.max", memory_max);
			if (r < 0)
				return r;
			/* No swap: the limit is on memory, not on what can be pushed out. */
			(void)write_string_at(dir, "memory.swap.max", "0");
		}
		r = attach(dir, pid, "pids.events", &cg->events_fds[0], &ret_procs[0]);
		if (r < 0)
			return r;
		cg->events_fds[1] = openat(dir, "memory.events", O_RDONLY | O_CLOEXEC);
		return cg->events_fds[1] < 0 ? -errno : 0;
	case CGROUP_V1:
		if (pids_max) {
			r = create_one(s->pids_base, id, &cg->paths[0], &pids);
			if (r < 0)
				return r;
			r = write_u64_at(pids, "pids.max", pids_max);
			if (r < 0)
				return r;
			r = attach(pids, pid, "pids.events", &cg->events_fds[0], &ret_procs[0]);
			if (r < 0)
				return r;
		}
		if (memory_max) {
			r = create_one(s->memory_base, id, &cg->paths[1], &mem);
			if (r < 0)
				return r;
			r = write_u64_at(mem, "memory.limit_in_bytes", memory_max);
			if (r >= 0 && s->memsw)
				r = write_u64_at(mem, "memory.memsw.limit_in_bytes", memory_max);
			if (r < 0)
				return r;
			r = attach(mem, pid, "memory.oom_control", &cg->events_fds[1],
				   &ret_procs[1]);
			if (r < 0)
				return r;
		}
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* Value of "key N" in a flat-keyed file such as pids.events or memory.oom_control, read afresh
 * from its open fd; 0 when absent or unreadable. */
static uint64_t keyed_value(int fd, const char *key)
{
	char buf[4096];
	size_t klen = strlen(key);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, key, klen) == 0 && l[klen] == ' ') {
			uint64_t v;

			return safe_atou64(l + klen + 1, &v) >= 0 ? v : 0;
		}
	return 0;
}

void sandbox_cgroup_limits_hit(const struct sandbox_cgroup *cg, bool *ret_pids, bool *ret_oom)
{
	*ret_pids = keyed_value(cg->events_fds[0], "max") > 0;
	*ret_oom = keyed_value(cg->events_fds[1], "oom_kill") > 0;
}

int sandbox_cgroup_kill(const struct sandbox_cgroup *cg)
{
	/* v2 only; v1 has no cgroup.kill and the caller kills the pid namespace's init instead,
	 * which takes every other process of the namespace with it. */
	if (cg->paths[0] && !cg->paths[1]) {
		int r = write_string(cg->paths[0], "cgroup.kill", "1");

		if (r != -ENOENT)
			return r;
	}
	return 0;
}

int sandbox_cgroup_remove(struct sandbox_cgroup *cg)
{
	int ret = 0;

	for (size_t i = 0; i < ELEMENTSOF(cg->paths); i++) {
		cg->events_fds[i] = safe_close(cg->events_fds[i]);
		if (!cg->paths[i])
			continue;
		if (rmdir(cg->paths[i]) < 0 && errno != ENOENT) {
			ret = -errno;
			continue;
		}
		free(cg->paths[i]);
		cg->paths[i] = NULL;
	}
	return ret;
}

void sandbox_cgroup_done(struct sandbox_cgroup *cg)
{
	for (size_t i = 0; i < ELEMENTSOF(cg->paths); i++) {
		cg->events_fds[i] = safe_close(cg->events_fds[i]);
		free(cg->paths[i]);
		cg->paths[i] = NULL;
	}
}

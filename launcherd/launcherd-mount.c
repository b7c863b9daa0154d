/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Building the sandbox's root.
 *
 * Everything below the new root is reached through fds: the root tmpfs is an fd from fsmount(),
 * mount points are opened with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS) relative to it, and
 * mounts are attached to those fds with move_mount(). A symlink planted inside a writable bind
 * can therefore not redirect a later mount (a "deny" over /work/.git/hooks) outside the sandbox:
 * any symlink on a target's path fails the spawn with ELOOP.
 *
 * Mount points are created only on tmpfs mounts launcherd made itself (the root and the plan's
 * tmpfs entries). A missing target inside a bind mount is an error: launcherd never creates
 * files or directories on the requester's filesystems (in privileged mode it would do so as root).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/major.h>
#include <linux/openat2.h>

#include "common/cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "launcherd/launcherd-apply.h"
#include "launcherd/launcherd-mount.h"

#if !defined(__NR_open_tree_attr) && (defined(__x86_64__) || defined(__aarch64__))
#define __NR_open_tree_attr 467 /* Linux 6.15; headers older than the kernel */
#endif

/* Where the root tmpfs is attached before pivot_root; hidden once the old root is detached. */
#define ROOT_STAGING "/tmp"
/* Holds the mount points, symlinks and directories of the plan; read-only once built. */
#define ROOT_TMPFS_SIZE "4194304"
#define EMPTY_FILE ".cordon-empty"

struct root_builder {
	int root_fd;
	dev_t own_devs[PLAN_MOUNTS_MAX + 2]; /* tmpfs mounts we made: mount points may go there */
	size_t n_own_devs;
	bool empty_file;
};

static int openat2_beneath(int dirfd, const char *path, int flags)
{
	return fd_openat2(dirfd, path, flags,
			  RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/*
 * Set attrs on a detached tree (or the tree at tree_fd), and make it private: a clone made by
 * open_tree() joins its source's peer group, and with shared propagation (a systemd host, or
 * launcherd's own unit) a mount made later inside it — a deny, a bind, a tmpfs under an earlier
 * bind — would appear in every peer: launcherd's namespace, the host's, other sandboxes. Private,
 * it neither sends nor receives.
 */
static int set_attrs(int tree_fd, uint64_t attrs, bool recursive)
{
	struct mount_attr a = { .attr_set = attrs, .propagation = MS_PRIVATE };

	if (mount_setattr(tree_fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a,
			  sizeof(a)) < 0)
		return -errno;
	return 0;
}

static int attach(int tree_fd, int mp_fd)
{
	if (move_mount(tree_fd, "", mp_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) <
	    0)
		return -errno;
	return 0;
}

static bool is_own(const struct root_builder *b, int fd)
{
	struct stat st;

	if (fd == b->root_fd)
		return true;
	if (fstat(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < b->n_own_devs; i++)
		if (b->own_devs[i] == st.st_dev)
			return true;
	return false;
}

static void add_own(struct root_builder *b, int mount_fd)
{
	struct stat st;

	if (b->n_own_devs < ELEMENTSOF(b->own_devs) && fstat(mount_fd, &st) == 0)
		b->own_devs[b->n_own_devs++] = st.st_dev;
}

enum mp_kind {
	MP_DIR,
	MP_FILE,
	MP_PARENT, /* create the parents only; the parent (one of ours) and the last name */
};

/* Create name in dir (a tmpfs of ours): an empty file or a directory. 0 or -errno (-EEXIST
 * when there is anything by that name, a symlink included: never followed). */
static int create_component(int dir, const char *name, bool file, mode_t mode)
{
	if (file) {
		int f = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
			       0644);

		if (f < 0)
			return -errno;
		safe_close(f);
		return 0;
	}
	return mkdirat(dir, name, mode) < 0 ? -errno : 0;
}

/*
 * Open (creating where allowed) the mount point for target, walking one component at a time
 * from the root without following symlinks; for MP_PARENT its parent, which must be in a tmpfs
 * of ours (-EROFS otherwise). Components are created only in our own tmpfs mounts. Once a
 * component was created here, the rest of the path cannot exist yet: it is created without
 * looking first. *ret_fd is an O_PATH fd to close, or -1 for the root itself (MP_PARENT of a
 * top-level name): mp_fd() gives the one to use. Returns 0 or -errno.
 */
static int make_mountpoint(struct root_builder *b, const char *target, enum mp_kind kind,
			   mode_t mode, const char **ret_last, int *ret_fd)
{
	_cleanup_close_ int dir = -1; /* -1: the root */
	const char *c = target + 1;
	bool made = false; /* dir was created by this walk: empty, and ours */

	*ret_fd = -1;
	for (;;) {
		const char *slash = strchr(c, '/');
		bool last = !slash;
		int at = dir >= 0 ? dir : b->root_fd;
		int flags = O_PATH | (last && kind == MP_FILE ? 0 : O_DIRECTORY);
		char name[NAME_MAX + 1];
		size_t n = last ? strlen(c) : (size_t)(slash - c);
		bool create_first;
		int fd, r;

		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, c, n);
		name[n] = '\0';
		if (last && kind == MP_PARENT) {
			if (!made && !is_own(b, at))
				return -EROFS;
			*ret_last = c;
			*ret_fd = TAKE_FD(dir);
			return 0;
		}
		/* Where it is ours for sure (the root, or below what this walk created) a name is
		 * most often new: create first, and look up only what was there (EEXIST), which
		 * resolves exactly as a lookup first would have. Elsewhere look first. */
		create_first = made || at == b->root_fd;
		fd = create_first ? -ENOENT : openat2_beneath(at, name, flags);
		if (fd == -ENOENT) {
			if (!create_first && !is_own(b, at))
				return -ENOENT;
			r = create_component(at, name, last && kind == MP_FILE, last ? mode : 0755);
			/* Only a name that existed before this walk may: below what it made, none. */
			if (r < 0 && !(r == -EEXIST && create_first && !made))
				return r;
			made = made || r == 0;
			fd = openat2_beneath(at, name, flags);
		}
		if (fd < 0)
			return fd;
		safe_close(dir);
		dir = fd;
		if (last) {
			*ret_fd = TAKE_FD(dir);
			return 0;
		}
		c = slash + 1;
	}
}

/* The directory make_mountpoint() gave back in fd. */
static int mp_fd(const struct root_builder *b, int fd)
{
	return fd >= 0 ? fd : b->root_fd;
}

/*
 * A fresh filesystem as a detached mount: fsopen + fsconfig + fsmount. opts are key/value
 * pairs, a NULL value meaning a flag.
 */
static int new_fs(const char *type, const char *const *opts, size_t n_opts, uint64_t attrs)
{
	_cleanup_close_ int fs = -1;
	int m;

	fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return -errno;
	for (size_t i = 0; i + 1 < n_opts; i += 2) {
		int r = opts[i + 1] ? fsconfig(fs, FSCONFIG_SET_STRING, opts[i], opts[i + 1], 0)
				    : fsconfig(fs, FSCONFIG_SET_FLAG, opts[i], NULL, 0);

		if (r < 0)
			return -errno;
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -errno;
	m = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)attrs);
	return m < 0 ? -errno : m;
}

static int new_tmpfs(mode_t mode, uint64_t size, uint64_t attrs)
{
	char m[16], s[32];
	const char *opts[] = { "mode", m, "size", s };

	(void)snprintf(m, sizeof(m), "%04o", (unsigned)mode);
	(void)snprintf(s, sizeof(s), "%llu", (unsigned long long)size);
	return new_fs("tmpfs", opts, ELEMENTSOF(opts), attrs);
}

/*
 * open_tree(OPEN_TREE_CLONE) and mount_setattr() of the clone in one call (Linux 6.15); before
 * that kernel, the two calls. A detached, private clone of dirfd/path with attrs set (not
 * recursively), or -errno.
 */
static int clone_with_attrs(int dirfd, const char *path, unsigned flags, uint64_t attrs)
{
	_cleanup_close_ int t = -1;
	int r;

#ifdef __NR_open_tree_attr
	struct mount_attr a = { .attr_set = attrs, .propagation = MS_PRIVATE };
	long fd = syscall(__NR_open_tree_attr, dirfd, path,
			  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags, &a, sizeof(a));

	if (fd >= 0 || errno != ENOSYS)
		return fd < 0 ? -errno : (int)fd;
#endif
	t = open_tree(dirfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | flags);
	if (t < 0)
		return -errno;
	r = set_attrs(t, attrs, false);
	return r < 0 ? r : TAKE_FD(t);
}

/* Detached clone of a path in our own mount namespace (fixed host paths such as /dev/null). */
static int clone_path(int dirfd, const char *path, uint64_t attrs)
{
	return clone_with_attrs(dirfd, path, 0, attrs);
}

static uint64_t bind_attrs(const struct plan_mount *m)
{
	return MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (m->read_only ? MOUNT_ATTR_RDONLY : 0);
}

int mount_dev_clone(int dev_template)
{
	/* Why this is safe: the template is launcherd's own (or its helper's), read-only, and
	 * holds nothing of any requester; each sandbox mounts a clone of it. Every mount in it is
	 * private (mount_dev_template()), so its clones are too: a mount a sandbox makes over one
	 * of its nodes stays in that sandbox. */
	int t = open_tree(dev_template, "",
			  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);

	return t < 0 ? -errno : t;
}

int mount_prepare_binds(const struct plan *plan, const int *fds, int dev_template, bool shallow,
			int *tree_fds, int *ret_index)
{
	for (size_t i = 0; i < plan->n_mounts; i++) {
		const struct plan_mount *m = &plan->mounts[i];
		int t, r;

		tree_fds[i] = -1;
		if (m->type == PLAN_MOUNT_DEV && dev_template >= 0) {
			t = mount_dev_clone(dev_template);
			tree_fds[i] = t < 0 ? -1 : t; /* else the child builds one */
			continue;
		}
		if (m->type != PLAN_MOUNT_BIND)
			continue;
		t = open_tree(fds[m->source], "",
			      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
				      (shallow ? 0 : AT_RECURSIVE));
		if (t < 0) {
			/* EPERM: no CAP_SYS_ADMIN here (user mode): the child falls back. EINVAL:
			 * the source lies in another mount namespace: the child clones it there,
			 * in the one the plan names (mount_build_root()); without one, nothing
			 * can say which view of that source the requester has. */
			if (errno == EPERM)
				continue;
			if (errno == EINVAL && (plan->mount_ns >= 0 || m->optional))
				continue;
			*ret_index = (int)i;
			return errno == EINVAL ? -EXDEV : -errno;
		}
		r = set_attrs(t, bind_attrs(m), true);
		if (r < 0) {
			safe_close(t);
			*ret_index = (int)i;
			return r;
		}
		tree_fds[i] = t;
	}
	return 0;
}

/*
 * User mode's fallback (the parent cannot clone: no CAP_SYS_ADMIN over the host's mount
 * namespace): our new mount namespace is a copy of launcherd's, so the fd's path names the same
 * object here. Resolve it, and accept the result only if it is the very inode the requester
 * opened (same st_dev and st_ino). User mode serves its own user only, and launcherd runs in that
 * user's own view (the controller started it): this reveals nothing the user could not reach.
 * Never in privileged mode, where a path resolved in launcherd's view could be another view
 * than the requester's (a tmpfs hiding a directory, a read-only bind: clone_foreign_binds()).
 * Runs before the root tmpfs is attached, so no path here can land in the sandbox's own tree.
 */
static int clone_bind_fallback(const struct plan_mount *m, int src)
{
	char proc[64], path[PATH_MAX];
	_cleanup_close_ int fd = -1, t = -1;
	struct stat a, b;
	ssize_t n;
	int r;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src);
	n = readlink(proc, path, sizeof(path) - 1);
	if (n < 0)
		return -errno;
	path[n] = '\0';
	if (path[0] != '/')
		return -EXDEV; /* "anon_inode:…", "socket:[…]": not a path */
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &a) < 0 || fstat(src, &b) < 0)
		return -errno;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -EXDEV;
	t = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (t < 0)
		return -errno;
	r = set_attrs(t, bind_attrs(m), true);
	return r < 0 ? r : TAKE_FD(t);
}

/*
 * Privileged mode, bind sources in another mount namespace than launcherd's (under its unit, or
 * a requester confined by another tool's namespace): the kernel clones a mount only in the
 * caller's own namespace, and a path resolved in ours could name another view of the source.
 * So we enter the namespace the plan names (the requester's, an nsfs fd it opened), clone each
 * such source there by its fd — exactly the requester's view: its submounts, its read-only
 * flags — and come back. A source that is not in that namespace either is refused (EINVAL).
 * Why this is safe: in there we only clone by fd (no path is looked up) and change the detached,
 * private clones' flags; we return to our own namespace before anything else. Needs
 * CAP_SYS_CHROOT and CAP_SYS_ADMIN, which the privileged child holds.
 */
static int clone_foreign_binds(const struct plan *plan, const int *fds, int *tree_fds,
			       int *ret_index)
{
	_cleanup_close_ int own = -1;
	int r = 0;

	own = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (own < 0)
		return -errno;
	if (plan->mount_ns < 0 || setns(fds[plan->mount_ns], CLONE_NEWNS) < 0)
		return plan->mount_ns < 0 ? -EXDEV : -errno;
	for (size_t i = 0; i < plan->n_mounts && r >= 0; i++) {
		const struct plan_mount *m = &plan->mounts[i];
		int t;

		if (m->type != PLAN_MOUNT_BIND || tree_fds[i] >= 0)
			continue;
		t = open_tree(fds[m->source], "",
			      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
		r = t < 0 ? -errno : set_attrs(t, bind_attrs(m), true);
		if (r < 0) {
			if (t >= 0)
				safe_close(t);
			if (m->optional)
				r = 0;
			else
				*ret_index = (int)i;
			continue;
		}
		tree_fds[i] = t;
	}
	if (setns(own, CLONE_NEWNS) < 0 && r >= 0)
		r = -errno;
	return r;
}

/*
 * The sandbox's terminal (plan controllingTty) by a name of its own: a clone of the mount of the
 * very pty slave the requester passed as the command's stdio, for /dev/console (mount_dev(),
 * as container runtimes name theirs). The slave is of the requester's devpts, not of the
 * sandbox's own instance, so no /dev/pts/N inside names it; glibc's ttyname() (tty(1)) then
 * scans /dev and finds it at /dev/console by device and inode. Only a Unix 98 pty slave (major
 * 136-143), and only the inode of that fd: cloned by the fd itself in our namespace, or,
 * privileged, in the plan's mountNamespace (as clone_foreign_binds()); in user mode by its
 * /dev/pts path, never through a symlink (as clone_bind_fallback()); checked to be the same
 * inode whichever way. Why this is safe: the sandbox holds that terminal already (its stdin,
 * stdout and stderr); the clone is that one file and nothing else of the requester's devpts
 * (a file bind has no ".."), with flags of its own (read-only, nosuid, noexec, private); and
 * opening it again checks the pty's owner and mode as the sandbox's user, the requester. No
 * other device is reachable through it. Best effort: where it cannot be cloned (another
 * namespace, none named) the terminal works unnamed: 0 with *ret_fd -1. -errno only when we
 * could not come back to our own mount namespace.
 */
static int clone_console(const struct plan *plan, const int *fds, bool user_mode, int *ret_fd)
{
	/* Read-only: no chmod or chown through it (a device opens for writing all the same). */
	const uint64_t attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
	int tty = fds[plan->stdio[0]];
	_cleanup_close_ int t = -1;
	struct stat st, c;

	*ret_fd = -1;
	if (fstat(tty, &st) < 0 || !S_ISCHR(st.st_mode) ||
	    major(st.st_rdev) < UNIX98_PTY_SLAVE_MAJOR ||
	    major(st.st_rdev) >= UNIX98_PTY_SLAVE_MAJOR + UNIX98_PTY_MAJOR_COUNT)
		return 0;
	t = clone_with_attrs(tty, "", AT_EMPTY_PATH, attrs);
	if (t < 0 && !user_mode && plan->mount_ns >= 0) {
		_cleanup_close_ int own = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);

		if (own < 0 || setns(fds[plan->mount_ns], CLONE_NEWNS) < 0)
			return 0;
		t = clone_with_attrs(tty, "", AT_EMPTY_PATH, attrs);
		if (setns(own, CLONE_NEWNS) < 0)
			return -errno;
	} else if (t < 0 && user_mode) {
		char proc[64], path[PATH_MAX];
		_cleanup_close_ int fd = -1;
		ssize_t n;

		(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tty);
		n = readlink(proc, path, sizeof(path) - 1);
		if (n < 0)
			return 0;
		path[n] = '\0';
		if (!startswith(path, "/dev/pts/"))
			return 0;
		fd = fd_openat2(AT_FDCWD, path, O_PATH | O_NOFOLLOW,
				RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		if (fd >= 0)
			t = clone_with_attrs(fd, "", AT_EMPTY_PATH, attrs);
	}
	/* Whichever way: exactly the requester's terminal, or nothing. */
	if (t >= 0 && fstat(t, &c) == 0 && c.st_dev == st.st_dev && c.st_ino == st.st_ino &&
	    c.st_rdev == st.st_rdev)
		*ret_fd = TAKE_FD(t);
	return 0;
}

static int mount_bind(struct root_builder *b, const struct plan_mount *m, int tree)
{
	_cleanup_close_ int mp = -1;
	struct stat st;
	int r;

	if (fstat(tree, &st) < 0)
		return -errno;
	r = make_mountpoint(b, m->target, S_ISDIR(st.st_mode) ? MP_DIR : MP_FILE, 0755, NULL, &mp);
	if (r < 0)
		return r;
	return attach(tree, mp);
}

static int mount_tmpfs(struct root_builder *b, const struct plan_mount *m)
{
	_cleanup_close_ int mp = -1, t = -1;
	int r;

	r = make_mountpoint(b, m->target, MP_DIR, 0755, NULL, &mp);
	if (r < 0)
		return r;
	t = new_tmpfs(m->mode, m->size_bytes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (t < 0)
		return t;
	r = attach(t, mp);
	if (r < 0)
		return r;
	add_own(b, t);
	return 0;
}

/* A directory of the plan's in a tmpfs of ours, with its exact mode (its owner is set last:
 * give_dirs()). */
static int mount_dir(struct root_builder *b, const struct plan_mount *m)
{
	_cleanup_close_ int parent = -1, d = -1;
	const char *last;

	int r = make_mountpoint(b, m->target, MP_PARENT, 0, &last, &parent);

	if (r < 0)
		return r;
	if (mkdirat(mp_fd(b, parent), last, m->mode) < 0 && errno != EEXIST)
		return -errno;
	d = openat2_beneath(mp_fd(b, parent), last, O_PATH | O_DIRECTORY);
	if (d < 0)
		return d;
	/* Exact mode, whatever the umask; by name since fchmod refuses O_PATH fds (no symlink
	 * can be there: the walk created or found a directory in a tmpfs of ours). */
	if (fchmodat(mp_fd(b, parent), last, m->mode, 0) < 0)
		return -errno;
	return 0;
}

/*
 * The plan's directories (the requester's $HOME, most often) become the requester's, once every
 * mount point beneath them is made: a 0700 home owned by root would shut the requester out of
 * what is bound there, and once it is the requester's, launcherd (which cannot override file
 * modes) could not go through it any more. Deepest first, for the same reason. The root is
 * read-only at the end, so owning one lets the requester change nothing but what the plan mounts
 * beneath it. Without CAP_CHOWN (a unit that withholds it) they stay root's.
 */
static int give_dirs(struct root_builder *b, const struct plan *plan, uid_t uid, gid_t gid,
		     int *ret_index)
{
	for (size_t i = plan->n_mounts; i-- > 0;) {
		_cleanup_close_ int d = -1;

		if (plan->mounts[i].type != PLAN_MOUNT_DIR)
			continue;
		*ret_index = (int)i;
		d = openat2_beneath(b->root_fd, plan->mounts[i].target + 1, O_PATH | O_DIRECTORY);
		if (d < 0)
			return d;
		if (fchownat(d, "", uid, gid, AT_EMPTY_PATH) < 0) {
			if (errno == EPERM)
				return 0;
			return -errno;
		}
	}
	*ret_index = -1;
	return 0;
}

static int mount_symlink(struct root_builder *b, const struct plan_mount *m)
{
	_cleanup_close_ int parent = -1;
	const char *last;

	int r = make_mountpoint(b, m->target, MP_PARENT, 0, &last, &parent);

	if (r < 0)
		return r;
	return symlinkat(m->link, mp_fd(b, parent), last) < 0 ? -errno : 0;
}

/*
 * A proc for our pid namespace, detached: made before the root step, while our mount namespace
 * still holds launcherd's fully visible /proc, without which the kernel refuses a proc mount
 * to any user namespace but the initial one (mount_too_revealing()): a prepared namespace in
 * user mode has none.
 */
static int new_proc(void)
{
	static const char *const opts[] = { "hidepid", "invisible" };

	return new_fs("proc", opts, ELEMENTSOF(opts),
		      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
}

/*
 * proc (from new_proc(), taken) at its target. hidepid=invisible; and, as bubblewrap does, the
 * few files through which a uid-0 process without capabilities could still change the host
 * (its DAC checks pass) are covered by read-only binds of themselves.
 */
static int mount_proc(struct root_builder *b, const struct plan_mount *m, bool uid0, int proc)
{
	static const char *const ro[] = { "sys", "sysrq-trigger", "irq", "bus" };
	_cleanup_close_ int mp = -1, t = proc;
	int r;

	if (t < 0)
		return -EBADF;
	r = make_mountpoint(b, m->target, MP_DIR, 0555, NULL, &mp);
	if (r < 0)
		return r;
	r = attach(t, mp);
	if (r < 0)
		return r;
	/* Any other uid is kept out of these by their modes (root-owned, 0644 and stricter). */
	for (size_t i = 0; uid0 && i < ELEMENTSOF(ro); i++) {
		_cleanup_close_ int c = -1;

		c = clone_with_attrs(t, ro[i], AT_SYMLINK_NOFOLLOW,
				     MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					     MOUNT_ATTR_NOEXEC);
		if (c == -ENOENT)
			continue;
		if (c < 0)
			return c;
		/* Back onto itself, by name under the proc mount we just made (and that nothing
		 * else can reach yet): no symlink to follow there. */
		if (move_mount(c, "", t, ro[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
	}
	return 0;
}

/*
 * The fixed part of a minimal /dev as a detached tree: a small tmpfs with a few nodes bound
 * from the host, the shm/ and pts/ mount points and the links, read-only (the node binds keep
 * their own flags: /dev/null stays writable). Privileged mode builds it once at start and
 * gives every sandbox a clone (mount_prepare_binds()); otherwise the child builds one before
 * its root step (mount_build_root()).
 */
int mount_dev_template(int *ret_fd)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
	static const struct {
		const char *name, *target;
	} links[] = {
		{ "ptmx", "pts/ptmx" },		 { "fd", "/proc/self/fd" },
		{ "stdin", "/proc/self/fd/0" },	 { "stdout", "/proc/self/fd/1" },
		{ "stderr", "/proc/self/fd/2" },
	};
	_cleanup_close_ int dev = -1;
	int f, r;

	dev = new_tmpfs(0755, 1024 * 1024, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	if (dev < 0)
		return dev;
	for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
		_cleanup_close_ int src = -1, target = -1;
		char host[32];

		f = openat(dev, nodes[i], O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
		if (f < 0)
			return -errno;
		safe_close(f);
		(void)snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		src = clone_path(AT_FDCWD, host, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
		if (src < 0)
			return src;
		target = openat(dev, nodes[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (target < 0)
			return -errno;
		r = attach(src, target);
		if (r < 0)
			return r;
	}
	/* The mount point of the sandbox's terminal (mount_dev()): an empty file nobody may
	 * open, where the sandbox has none. */
	f = openat(dev, "console", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0)
		return -errno;
	safe_close(f);
	if (mkdirat(dev, "shm", 0755) < 0 || mkdirat(dev, "pts", 0755) < 0)
		return -errno;
	for (size_t i = 0; i < ELEMENTSOF(links); i++)
		if (symlinkat(links[i].target, dev, links[i].name) < 0)
			return -errno;
	/* The nodes and links are final; shm and pts get separate mounts and stay writable. */
	r = set_attrs(dev, MOUNT_ATTR_RDONLY, false);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(dev);
	return 0;
}

/* A fresh filesystem attached at dir/name (a mount point on a tree we hold). */
static int attach_new_at(int tree, int dir, const char *name)
{
	_cleanup_close_ int t = tree, mp = -1;

	if (t < 0)
		return t;
	mp = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mp < 0)
		return -errno;
	return attach(t, mp);
}

/* /dev: the template (a clone made by the parent, or by mount_build_root() before the root
 * step), then a private shm, a new devpts instance of this sandbox's own, and its terminal at
 * /dev/console when it has one (clone_console()). */
static int mount_dev(struct root_builder *b, const struct plan_mount *m, int template_clone,
		     int console_clone)
{
	static const char *const pts_opts[] = { "newinstance", NULL,   "ptmxmode",
						"0666",	       "mode", "0620" };
	_cleanup_close_ int mp = -1, dev = template_clone, console = console_clone, target = -1;
	int r;

	if (dev < 0)
		return -EBADF;
	r = make_mountpoint(b, m->target, MP_DIR, 0755, NULL, &mp);
	if (r < 0)
		return r;
	r = attach(dev, mp);
	if (r < 0)
		return r;
	r = attach_new_at(new_tmpfs(01777, 64ULL * 1024 * 1024,
				    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV),
			  dev, "shm");
	if (r < 0)
		return r;
	r = attach_new_at(new_fs("devpts", pts_opts, ELEMENTSOF(pts_opts),
				 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC),
			  dev, "pts");
	if (r < 0 || console < 0)
		return r;
	target = openat(dev, "console", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (target < 0)
		return -errno;
	return attach(console, target);
}

/* Hide what an earlier mount exposed: an empty read-only tmpfs over a directory, an empty
 * read-only file over anything else. A missing target is fine. */
static int mount_deny(struct root_builder *b, const struct plan_mount *m)
{
	const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			    MOUNT_ATTR_NOEXEC;
	_cleanup_close_ int target = -1, t = -1;
	struct stat st;

	target = openat2_beneath(b->root_fd, m->target + 1, O_PATH | O_NOFOLLOW);
	if (target == -ENOENT)
		return 0;
	if (target < 0)
		return target;
	if (fstat(target, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		t = new_tmpfs(0555, 4096, ro);
	else {
		if (!b->empty_file) {
			int f = openat(b->root_fd, EMPTY_FILE,
				       O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);

			if (f < 0)
				return -errno;
			safe_close(f);
			b->empty_file = true;
		}
		t = clone_path(b->root_fd, EMPTY_FILE, ro);
	}
	if (t < 0)
		return t;
	return attach(t, target);
}

/* A fresh tmpfs for the sandbox's root, before the plan's mounts. */
static int new_root_tmpfs(void)
{
	return new_tmpfs(0755, 4 * 1024 * 1024, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
}

int mount_make_empty_root(bool seed)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	_cleanup_close_ int root = new_root_tmpfs();
	int r;

	if (root < 0)
		return root;
	if (!seed) /* a copy of the seed's namespace: private, its one mount read-only */
		return move_mount(root, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) < 0 ? -errno
											: 0;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    move_mount(root, "", AT_FDCWD, ROOT_STAGING, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	r = mount_pivot_root(root);
	if (r >= 0 && mount_setattr(root, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
		r = -errno;
	return r;
}

int mount_build_root(const struct plan *plan, const int *fds, int *tree_fds, uid_t uid, gid_t gid,
		     bool user_mode, int mntns_fd, int *ret_step, int *ret_index, int *ret_root_fd)
{
	struct root_builder b = { .root_fd = -1 };
	_cleanup_close_ int root = -1, console = -1;
	bool foreign = false;
	int r;

	*ret_index = -1;

	/* Nothing we mount may propagate back to the host (or in from it). With a prepared
	 * namespace we are still in launcherd's own until the root step: touch nothing here. */
	*ret_step = STEP_MOUNT_PRIVATE;
	if (mntns_fd < 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;

	/* Fallback clones of bind sources, while the host tree is still what paths resolve in;
	 * and proc, while launcherd's is still in our namespace (new_proc()). */
	*ret_step = STEP_MOUNT;
	for (size_t i = 0; i < plan->n_mounts; i++) {
		const struct plan_mount *m = &plan->mounts[i];

		if (m->type == PLAN_MOUNT_PROC) {
			*ret_index = (int)i;
			r = new_proc();
			if (r < 0)
				return r;
			tree_fds[i] = r;
			continue;
		}

		/* The terminal's clone, while the requester's devpts can still be reached. */
		if (m->type == PLAN_MOUNT_DEV && plan->controlling_tty && console < 0) {
			*ret_index = (int)i;
			r = clone_console(plan, fds, user_mode, &console);
			if (r < 0)
				return r;
		}
		if (m->type == PLAN_MOUNT_DEV && tree_fds[i] < 0) {
			/* No template clone from the parent: make one while the host's /dev is
			 * still what "/dev/null" names. */
			*ret_index = (int)i;
			r = mount_dev_template(&tree_fds[i]);
			if (r < 0)
				return r;
			continue;
		}
		if (m->type != PLAN_MOUNT_BIND || tree_fds[i] >= 0)
			continue;
		if (!user_mode) {
			foreign = true; /* the parent found it in another namespace */
			continue;
		}
		r = clone_bind_fallback(m, fds[m->source]);
		if (r < 0 && !m->optional) {
			*ret_index = (int)i;
			return r;
		}
		tree_fds[i] = r;
	}
	if (foreign) {
		*ret_index = -1;
		r = clone_foreign_binds(plan, fds, tree_fds, ret_index);
		if (r < 0)
			return r;
	}

	*ret_step = STEP_ROOT;
	if (mntns_fd >= 0) {
		/* The prepared namespace: its one mount, a fresh empty tmpfs, is our root
		 * already (setns() moved our root and cwd there). */
		if (setns(mntns_fd, CLONE_NEWNS) < 0)
			return -errno;
		root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0)
			return -errno;
	} else {
		root = new_root_tmpfs();
		if (root < 0)
			return root;
		if (move_mount(root, "", AT_FDCWD, ROOT_STAGING, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
	}
	b.root_fd = root;
	add_own(&b, root);

	*ret_step = STEP_MOUNT;
	for (size_t i = 0; i < plan->n_mounts; i++) {
		const struct plan_mount *m = &plan->mounts[i];

		*ret_index = (int)i;
		switch (m->type) {
		case PLAN_MOUNT_BIND:
			if (tree_fds[i] < 0) /* optional, and unavailable */
				continue;
			r = mount_bind(&b, m, tree_fds[i]);
			if (r < 0 && m->optional)
				r = 0;
			break;
		case PLAN_MOUNT_TMPFS:
			r = mount_tmpfs(&b, m);
			break;
		case PLAN_MOUNT_DIR:
			r = mount_dir(&b, m);
			break;
		case PLAN_MOUNT_SYMLINK:
			r = mount_symlink(&b, m);
			break;
		case PLAN_MOUNT_PROC:
			r = mount_proc(&b, m, uid == 0, tree_fds[i]);
			tree_fds[i] = -1; /* mount_proc() took it */
			break;
		case PLAN_MOUNT_DEV:
			r = mount_dev(&b, m, tree_fds[i], TAKE_FD(console));
			tree_fds[i] = -1; /* mount_dev() took it */
			break;
		case PLAN_MOUNT_DENY:
			r = mount_deny(&b, m);
			break;
		default:
			r = -EINVAL;
		}
		if (r < 0)
			return r;
	}
	r = give_dirs(&b, plan, uid, gid, ret_index);
	if (r < 0)
		return r;
	*ret_index = -1;

	*ret_step = STEP_ROOT;
	if (b.empty_file && unlinkat(root, EMPTY_FILE, 0) < 0)
		return -errno;
	/* The root itself (mount points, links, dirs) is final: read-only, not recursively. */
	r = set_attrs(root, MOUNT_ATTR_RDONLY, false);
	if (r < 0)
		return r;
	*ret_root_fd = TAKE_FD(root);
	return 0;
}

int mount_pivot_root(int root_fd)
{
	/* pivot_root(".", ".") stacks the old root on top of the new one; detaching the top mount
	 * then leaves only the new root, without needing a directory to put the old root in. */
	if (fchdir(root_fd) < 0)
		return -errno;
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -errno;
	if (umount2(".", MNT_DETACH) < 0)
		return -errno;
	if (chdir("/") < 0)
		return -errno;
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/paths.h"
#include "common/system.h"
#include "common/util.h"

#ifndef CORDON_RUNSTATEDIR
#define CORDON_RUNSTATEDIR "/run"
#endif

/* A directory we may keep sockets and state in: a real directory (not a symlink), owned by us,
 * not writable by group or others. */
static int check_private_dir(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

int cordon_make_private_dir(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return check_private_dir(path);
}

int cordon_runtime_dir(char **ret, int create)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	_cleanup_free_ char *p = NULL;
	int r;

	if (!isempty(xdg) && path_is_absolute(xdg) && check_private_dir(xdg) >= 0)
		p = strdup_printf("%s/cordon", xdg);
	else {
		_cleanup_free_ char *run = strdup_printf("/run/user/%u", (unsigned)geteuid());

		if (!run)
			return -ENOMEM;
		if (check_private_dir(run) >= 0)
			p = strdup_printf("%s/cordon", run);
		else
			p = strdup_printf("/tmp/cordon-%u", (unsigned)geteuid());
	}
	if (!p)
		return -ENOMEM;
	r = create ? cordon_make_private_dir(p) : 0;
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

int cordon_controller_socket_path(char **ret, int create_dir)
{
	const char *e = getenv("CORDON_CONTROLLER_SOCKET");
	_cleanup_free_ char *dir = NULL;
	char *p;
	int r;

	if (!isempty(e)) {
		p = strdup(e);
		if (!p)
			return -ENOMEM;
		*ret = p;
		return 0;
	}
	r = cordon_runtime_dir(&dir, create_dir);
	if (r < 0)
		return r;
	p = strdup_printf("%s/controller.sock", dir);
	if (!p)
		return -ENOMEM;
	*ret = p;
	return 0;
}

const char *cordon_launcherd_socket_path(void)
{
	const char *e = getenv("CORDON_LAUNCHERD_SOCKET");

	return !isempty(e) ? e : CORDON_RUNSTATEDIR "/cordon/launcherd.sock";
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user's state directory. A file of its own because it may ask the user database
 * (getpwuid), which a statically linked program must not pull in: the CLI never needs it.
 */
#include "config.h"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/paths.h"
#include "common/system.h"
#include "common/util.h"

int cordon_state_dir(char **ret, int create)
{
	const char *xdg = getenv("XDG_STATE_HOME");
	_cleanup_free_ char *base = NULL, *p = NULL;
	int r;

	if (!isempty(xdg) && path_is_absolute(xdg))
		base = strdup(xdg);
	else {
		const char *home = getenv("HOME");
		struct passwd *pw;

		if (isempty(home) || !path_is_absolute(home)) {
			pw = getpwuid(geteuid());
			if (!pw)
				return -ENOENT;
			home = pw->pw_dir;
		}
		base = strdup_printf("%s/.local/state", home);
	}
	if (!base)
		return -ENOMEM;
	p = strdup_printf("%s/cordon", base);
	if (!p)
		return -ENOMEM;
	if (create) {
		r = mkdir_p(base, 0700);
		if (r < 0)
			return r;
		r = cordon_make_private_dir(p);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(p);
	return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "policy/policy-dump.h"
#include "policy/policy-seccomp.h"

static void put_fd(FILE *f, const struct compiled_plan *plan, json_t *v)
{
	json_int_t i = json_is_integer(v) ? json_integer_value(v) : -1;

	if (i >= 0 && (size_t)i < plan->n_fds)
		fprintf(f, "fd:%lld -> %s", (long long)i, plan->fd_what[i]);
	else
		fprintf(f, "fd:%lld -> ?", (long long)i);
}

static void put_json(FILE *f, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

	fputs(s ? s : "?", f);
	free(s);
}

static void put_strv_json(FILE *f, json_t *a, const char *sep)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) {
		if (i > 0)
			fputs(sep, f);
		if (json_is_string(v))
			fputs(json_string_value(v), f);
		else
			put_json(f, v);
	}
}

/* Members of an object as "k=v" in key order. */
static void put_object(FILE *f, json_t *o)
{
	const char *key;
	json_t *v;
	bool first = true;
	void *iter;
	_cleanup_free_ const char **keys = calloc(json_object_size(o) + 1, sizeof(char *));
	size_t n = 0;

	if (!keys)
		return;
	json_object_foreach(o, key, v)
		keys[n++] = key;
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && strcmp(keys[k - 1], keys[k]) > 0; k--) {
			const char *t = keys[k];

			keys[k] = keys[k - 1];
			keys[k - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		iter = json_object_iter_at(o, keys[i]);
		fprintf(f, "%s%s=", first ? "" : " ", keys[i]);
		put_json(f, json_object_iter_value(iter));
		first = false;
	}
}

static void put_mount(FILE *f, const struct compiled_plan *plan, json_t *m)
{
	const char *type = json_string_value(json_object_get(m, "type"));
	const char *target = json_string_value(json_object_get(m, "target"));
	json_t *v;

	fprintf(f, "  %s %s", type ? type : "?", target ? target : "?");
	if (type && streq(type, "bind")) {
		fputs(" <- ", f);
		put_fd(f, plan, json_object_get(m, "source"));
		fputs(json_is_false(json_object_get(m, "readOnly")) ? " rw" : " ro", f);
	} else if (type && streq(type, "symlink")) {
		fprintf(f, " -> %s", json_string_value(json_object_get(m, "link")));
	}
	v = json_object_get(m, "mode");
	if (v)
		fprintf(f, " mode=0%llo", (unsigned long long)json_integer_value(v));
	v = json_object_get(m, "sizeBytes");
	if (v)
		fprintf(f, " size=%lld", (long long)json_integer_value(v));
	if (json_is_true(json_object_get(m, "optional")))
		fputs(" optional", f);
	fputc('\n', f);
}

static void put_landlock(FILE *f, json_t *ll)
{
	json_t *fs = json_object_get(ll, "fs"), *net = json_object_get(ll, "net"), *v;
	size_t i;

	fprintf(f, "landlock: %s\n",
		json_is_true(json_object_get(ll, "required")) ? "required" : "best-effort");
	json_array_foreach(fs, i, v) {
		fprintf(f, "  fs %s: ", json_string_value(json_object_get(v, "path")));
		put_strv_json(f, json_object_get(v, "access"), " ");
		fputc('\n', f);
	}
	if (net) {
		fputs("  net bindTcp=", f);
		put_json(f, json_object_get(net, "bindTcp"));
		fputs(" connectTcp=", f);
		put_json(f, json_object_get(net, "connectTcp"));
		fputc('\n', f);
	} else {
		fputs("  net: not handled\n", f);
	}
	if (json_object_get(ll, "scope")) {
		fputs("  scope: ", f);
		put_strv_json(f, json_object_get(ll, "scope"), " ");
		fputc('\n', f);
	} else {
		fputs("  scope: none\n", f);
	}
}

static int put_pfc(FILE *f, const char *key)
{
	_cleanup_free_ struct policy_syscall_rule *rules = NULL;
	_cleanup_free_ char *buf = NULL, *text = NULL;
	_cleanup_close_ int fd = -1;
	size_t n = 0, len = 0;
	int r;

	r = policy_syscall_spec_from_key(key, &rules, &n, &buf);
	if (r < 0)
		return r;
	fd = memfd_create("cordon-pfc", MFD_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	r = policy_seccomp_export_pfc(rules, n, fd);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return negative_errno();
	r = read_full_fd(fd, 16U * 1024U * 1024U, &text, &len);
	if (r < 0)
		return r;
	fputs("seccomp pfc:\n", f);
	fwrite(text, 1, len, f);
	fputs("seccomp pfc end\n", f);
	return 0;
}

int policy_dump(const struct compiled_plan *plan, unsigned flags, char **ret)
{
	static const char *const known[] = { "argv",
					     "cwd",
					     "hostname",
					     "network",
					     "proxyPort",
					     "timeoutMs",
					     "dieWithRequester",
					     "envp",
					     "stdio",
					     "mounts",
					     "landlock",
					     "seccomp",
					     "rlimits",
					     "cgroup",
					     NULL };
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	const char *key;
	json_t *p = plan->plan, *v;
	FILE *f;
	size_t i;
	int r = 0;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fputs("argv: ", f);
	put_json(f, json_object_get(p, "argv"));
	fputc('\n', f);
	for (size_t k = 1; k < 7; k++) {
		v = json_object_get(p, known[k]);
		if (!v)
			continue;
		fprintf(f, "%s: ", known[k]);
		if (json_is_string(v))
			fputs(json_string_value(v), f);
		else
			put_json(f, v);
		fputc('\n', f);
	}
	fputs("envp:\n", f);
	json_array_foreach(json_object_get(p, "envp"), i, v)
		fprintf(f, "  %s\n", json_string_value(v));
	if ((v = json_object_get(p, "stdio"))) {
		json_t *s;

		fputs("stdio:", f);
		json_object_foreach(v, key, s) {
			fprintf(f, " %s=", key);
			put_fd(f, plan, s);
		}
		fputc('\n', f);
	}
	fputs("mounts:\n", f);
	json_array_foreach(json_object_get(p, "mounts"), i, v)
		put_mount(f, plan, v);
	if ((v = json_object_get(p, "landlock")))
		put_landlock(f, v);
	else
		fputs("landlock: none\n", f);
	if ((v = json_object_get(p, "seccomp"))) {
		fputs("seccomp: program ", f);
		put_fd(f, plan, json_object_get(v, "program"));
		fputc('\n', f);
	} else {
		fputs("seccomp: none\n", f);
	}
	fputs("rlimits: ", f);
	put_object(f, json_object_get(p, "rlimits"));
	fputc('\n', f);
	fputs("cgroup: ", f);
	if ((v = json_object_get(p, "cgroup")))
		put_object(f, v);
	else
		fputs("none", f);
	fputc('\n', f);
	/* Anything else the plan grows is still shown, never silently dropped. */
	json_object_foreach(p, key, v) {
		bool k = false;

		for (const char *const *n = known; *n; n++)
			if (streq(*n, key))
				k = true;
		if (!k) {
			fprintf(f, "%s: ", key);
			put_json(f, v);
			fputc('\n', f);
		}
	}
	fputs("fds:\n", f);
	for (size_t k = 0; k < plan->n_fds; k++)
		fprintf(f, "  fd:%zu -> %s\n", k, plan->fd_what[k]);
	fputs("unenforced:", f);
	for (char **s = plan->unenforced; s && *s; s++)
		fprintf(f, " %s", *s);
	fputs("\nskipped:", f);
	for (char **s = plan->skipped; s && *s; s++)
		fprintf(f, " %s", *s);
	fputs("\nhost-executed, absent:", f);
	for (char **s = plan->host_exec_absent; s && *s; s++)
		fprintf(f, " %s", *s);
	fprintf(f, "\nmaxOutputBytes: %llu\n", (unsigned long long)plan->max_output_bytes);
	fprintf(f, "seccomp spec: %s\n", plan->seccomp_key ? plan->seccomp_key : "none");
	if ((flags & POLICY_DUMP_PFC) && plan->seccomp_key)
		r = put_pfc(f, plan->seccomp_key);
	if (fclose(f) != 0)
		return -ENOMEM;
	if (r < 0)
		return r;
	*ret = TAKE_PTR(buf);
	return 0;
}

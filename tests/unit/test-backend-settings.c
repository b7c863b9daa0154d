/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backend settings: every validation rule (unknown ids, types, options, lengths, required
 * settings and secrets, null), secrets split out, an empty secret meaning "no change", the
 * effective settings; the store: owner-only directory and files, atomic replace (no temp file
 * left, the old content kept when persisting fails), corrupt files moved aside and reported,
 * settings surviving a pack's disable until an explicit purge; the active selection: round
 * trip, missing/torn/invalid files yielding builtin:auto, never an unconfined backend unless
 * allowed.
 *
 * Persistence failures are injected by making the directory or the file unchangeable: for an
 * ordinary user, chmod 0500 on the directory; as root (who ignores modes), the immutable
 * attribute (FS_IOC_SETFLAGS, FS_IMMUTABLE_FL, as chattr +i does) on the file (the rename
 * fails after the temp file was written) and on the directory (the temp file cannot be
 * created). Where neither works (a filesystem without attributes, no CAP_LINUX_IMMUTABLE) those
 * checks are skipped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "backends/backend-state.h"
#include "tests/tap.h"

static const char descriptor_json[] =
	"{\"kind\":\"cloud\",\"name\":\"Cloud\",\"description\":\"\","
	"\"settings\":{\"fields\":["
	"{\"id\":\"image\",\"type\":\"string\",\"label\":\"Image\",\"required\":true,"
	"\"defaultValue\":\"debian:12\"},"
	"{\"id\":\"region\",\"type\":\"select\",\"label\":\"Region\",\"required\":true,"
	"\"options\":[\"eu\",\"us\"]},"
	"{\"id\":\"cpus\",\"type\":\"number\",\"label\":\"CPUs\",\"defaultValue\":1},"
	"{\"id\":\"verbose\",\"type\":\"boolean\",\"label\":\"Verbose\"},"
	"{\"id\":\"apiKey\",\"type\":\"secret\",\"label\":\"API key\",\"required\":true},"
	"{\"id\":\"token\",\"type\":\"secret\",\"label\":\"Token\"}]},"
	"\"claims\":{\"platforms\":[\"linux\"],\"enforces\":[],\"isolation\":\"remote\"}}";

static struct backend_descriptor *desc;

static bool configured_apikey(void *userdata, const char *id)
{
	(*(int *)userdata)++;
	return streq(id, "apiKey");
}

static int validate(const char *candidate, backend_secret_configured_fn fn, void *ud,
		    struct backend_settings_update *u, struct field_error *err)
{
	_cleanup_json_ json_t *j =
		json_loads(candidate, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);

	if (!j)
		bail("bad inline JSON: %s", candidate);
	return backend_settings_validate(desc, j, NULL, fn, ud, u, err);
}

static void test_validate_ok(void)
{
	_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };
	_cleanup_json_ json_t *want = NULL;
	struct field_error err = { "", "" };
	int r;

	r = validate("{\"image\":\"alpine\",\"region\":\"us\",\"cpus\":2.5,\"verbose\":false,"
		     "\"apiKey\":\"sk-live-1\",\"token\":\"\"}",
		     NULL, NULL, &u, &err);
	if (!is_int(0, r, "a complete candidate validates"))
		diag("%s: %s", err.field, err.reason);
	want = json_pack("{s:s, s:s, s:f, s:b}", "image", "alpine", "region", "us", "cpus", 2.5,
			 "verbose", 0);
	ok(u.settings && json_equal(want, u.settings),
	   "the plain settings are exactly the non-secret fields given");
	is_int(1, (long long)u.n_secrets, "one secret to set (the empty one means no change)");
	ok(u.n_secrets == 1 && streq(u.secrets[0].field->id, "apiKey") &&
		   streq(u.secrets[0].value, "sk-live-1"),
	   "apiKey is split out with its value");
	ok(!json_object_get(u.settings, "apiKey") && !json_object_get(u.settings, "token"),
	   "no secret stays among the settings");
}

static void test_validate_rules(void)
{
	static const struct {
		const char *candidate, *field, *reason;
		int code;
	} bad[] = {
		{ "[]", "settings", "expected an object", -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":\"k\",\"imagee\":\"x\"}", "settings.imagee",
		  "unknown setting", -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":\"k\",\"image\":3}", "settings.image",
		  "expected a string", -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":\"k\",\"cpus\":\"2\"}", "settings.cpus",
		  "expected a number", -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":\"k\",\"verbose\":\"yes\"}", "settings.verbose",
		  "expected true or false", -EINVAL },
		{ "{\"region\":\"mars\",\"apiKey\":\"k\"}", "settings.region",
		  "not one of the options", -EINVAL },
		{ "{\"region\":1,\"apiKey\":\"k\"}", "settings.region", "expected a string",
		  -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":5}", "settings.apiKey", "expected a string",
		  -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":\"k\",\"image\":{\"a\":1}}", "settings.image",
		  "expected a string", -EINVAL },
		{ "{\"apiKey\":\"k\"}", "settings.region", "required setting is missing", -EINVAL },
		{ "{\"region\":null,\"apiKey\":\"k\"}", "settings.region",
		  "required setting is missing", -EINVAL },
		{ "{\"region\":\"eu\"}", "settings.apiKey", "required secret is not configured",
		  -EINVAL },
		{ "{\"region\":\"eu\",\"apiKey\":\"\"}", "settings.apiKey",
		  "required secret is not configured", -EINVAL },
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct backend_settings_update u = { .n_secrets = 77 };
		struct field_error err = { "", "" };

		is_int(bad[i].code, validate(bad[i].candidate, NULL, NULL, &u, &err),
		       "%s is refused", bad[i].candidate);
		is_str(bad[i].field, err.field, "field of %s", bad[i].candidate);
		is_str(bad[i].reason, err.reason, "reason of %s", bad[i].candidate);
		ok(!u.settings && u.n_secrets == 77, "the result is untouched");
	}
}

static void test_validate_edges(void)
{
	_cleanup_free_ char *big = malloc(BACKEND_SETTING_VALUE_MAX + 64);
	_cleanup_json_ json_t *j = NULL;
	struct field_error err = { "", "" };
	int calls = 0;

	if (!big)
		bail("out of memory");
	/* The longest value is fine, one byte more is not. */
	memset(big, 'x', BACKEND_SETTING_VALUE_MAX);
	big[BACKEND_SETTING_VALUE_MAX] = '\0';
	j = json_pack("{s:s, s:s, s:s}", "region", "eu", "apiKey", "k", "image", big);
	{
		_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };

		is_int(0, backend_settings_validate(desc, j, NULL, NULL, NULL, &u, &err),
		       "a %d-byte string is accepted", BACKEND_SETTING_VALUE_MAX);
	}
	big[BACKEND_SETTING_VALUE_MAX] = 'x';
	big[BACKEND_SETTING_VALUE_MAX + 1] = '\0';
	(void)json_object_set_new(j, "image", json_string(big));
	{
		struct backend_settings_update u = { 0 };

		is_int(-E2BIG, backend_settings_validate(desc, j, NULL, NULL, NULL, &u, &err),
		       "one byte more is -E2BIG");
		is_str("settings.image", err.field, "naming the field");
	}
	(void)json_object_set_new(j, "image", json_string("x"));
	(void)json_object_set_new(j, "apiKey", json_string(big));
	{
		struct backend_settings_update u = { 0 };

		is_int(-E2BIG, backend_settings_validate(desc, j, NULL, NULL, NULL, &u, &err),
		       "an over-long secret too");
	}

	/* A configured secret satisfies "required"; an empty input then changes nothing. */
	{
		_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };

		is_int(0,
		       validate("{\"region\":\"eu\",\"apiKey\":\"\"}", configured_apikey, &calls,
				&u, &err),
		       "a configured required secret may be left empty");
		ok(calls > 0, "the callback was asked");
		is_int(0, (long long)u.n_secrets, "and nothing is to be set");
	}
	{
		_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };

		is_int(0, validate("{\"region\":\"eu\"}", configured_apikey, &calls, &u, &err),
		       "or left out");
		ok(json_object_size(u.settings) == 1 &&
			   streq(json_string_value(json_object_get(u.settings, "region")), "eu"),
		   "image is not filled in by validation (its default applies later)");
	}
	{
		_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };

		is_int(0,
		       validate(
			       "{\"region\":\"eu\",\"apiKey\":\"k\",\"cpus\":null,\"verbose\":null}",
			       NULL, NULL, &u, &err),
		       "null means not given");
		ok(!json_object_get(u.settings, "cpus"), "and is dropped");
	}
	{
		_cleanup_json_ json_t *c = json_loads("{\"image\":1}", 0, NULL);
		struct backend_settings_update u = { 0 };

		backend_settings_validate(desc, c, "params.settings", NULL, NULL, &u, &err);
		is_str("params.settings.image", err.field, "the caller's path is used in errors");
	}
}

static void test_scrub_and_effective(void)
{
	_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };
	_cleanup_json_ json_t *c =
		json_loads("{\"region\":\"eu\",\"apiKey\":\"sk-scrub-me\"}", 0, NULL);
	_cleanup_json_ json_t *stored = json_loads("{\"cpus\":4,\"obsolete\":1}", 0, NULL);
	_cleanup_json_ json_t *eff = NULL, *want = NULL;
	struct field_error err = { "", "" };
	const char *v;
	bool zero = true;

	if (!c || !stored || backend_settings_validate(desc, c, NULL, NULL, NULL, &u, &err) < 0)
		bail("validate");
	backend_settings_scrub_secrets(desc, c);
	v = json_string_value(json_object_get(c, "apiKey"));
	for (size_t i = 0; i < strlen("sk-scrub-me"); i++)
		zero = zero && v[i] == '\0';
	ok(zero, "scrub zeroes the secret's bytes inside the request object");
	is_str("eu", json_string_value(json_object_get(c, "region")), "and leaves the rest");
	ok(u.n_secrets == 1 && streq(u.secrets[0].value, "sk-scrub-me"),
	   "the split-out copy is unaffected");

	is_int(0, backend_settings_effective(desc, stored, &eff), "effective settings");
	want = json_pack("{s:s, s:i}", "image", "debian:12", "cpus", 4);
	ok(json_equal(want, eff),
	   "stored values over defaults; no secret, no unset field, no obsolete id");
}

static void write_raw(const char *dir, const char *name, const char *text, mode_t mode)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);

	if (write_file_atomic(p, text, strlen(text), mode) < 0)
		bail("cannot write %s", p);
}

static char *read_raw(const char *dir, const char *name)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);
	char *buf = NULL;

	if (read_full_file(p, 1 << 20, &buf, NULL) < 0)
		return NULL;
	return buf;
}

static int set_immutable(const char *path, bool on)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int flags;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return -errno;
	flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	return ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
}

/* Make path (a file or the directory) unchangeable, or undo it. */
static int freeze(const char *path, bool is_dir, bool on)
{
	if (geteuid() != 0) {
		if (!is_dir)
			return -EOPNOTSUPP; /* a user can still rename over a 0400 file */
		return chmod(path, on ? 0500 : 0700) < 0 ? -errno : 0;
	}
	return set_immutable(path, on);
}

static struct backend_ref ref_cloud, ref_other;

static void test_store_basic(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "store"), *text = NULL, *sp = NULL;
	_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
	_cleanup_json_ json_t *in =
		json_pack("{s:s, s:i, s:b}", "image", "alpine", "cpus", 2, "verbose", 1);
	_cleanup_json_ json_t *got = NULL, *doc = NULL;
	_cleanup_free_ char *aside = NULL;
	struct field_error err = { "", "" };
	struct stat st;

	is_int(0, backend_settings_store_open(dir, &s, &aside, &err), "open creates the store");
	ok(stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700,
	   "the directory is created 0700");
	ok(!aside, "nothing moved aside");
	is_int(0, backend_settings_store_get(s, &ref_cloud, &got), "nothing stored yet: 0");
	ok(json_is_object(got) && json_object_size(got) == 0, "and an empty object");
	json_decref(TAKE_PTR(got));

	is_int(0, backend_settings_store_put(s, &ref_cloud, in, &err), "put");
	is_int(1, backend_settings_store_get(s, &ref_cloud, &got), "get finds it");
	ok(json_equal(in, got), "with the same content");
	(void)json_object_set_new(got, "image", json_string("changed"));
	json_decref(TAKE_PTR(got));
	backend_settings_store_get(s, &ref_cloud, &got);
	is_str("alpine", json_string_value(json_object_get(got, "image")),
	       "get returns a copy: changing it does not change the store");

	sp = tap_path_in(dir, "settings.json");
	ok(stat(sp, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid(),
	   "settings.json is 0600 and ours");
	is_int(1, tap_dir_entries(dir), "no temp file is left behind");
	text = read_raw(dir, "settings.json");
	doc = text ? json_loads(text, 0, NULL) : NULL;
	ok(doc && json_integer_value(json_object_get(doc, "version")) == 1 &&
		   json_equal(json_object_get(json_object_get(doc, "backends"),
					      "pack:org.example.cloud:cloud"),
			      in),
	   "the file is {version: 1, backends: {<ref text>: settings}}");

	/* Shape re-checks in put, naming the field; nothing written. */
	{
		static const char *const bad[] = {
			"{\"image\":[1]}",
			"{\"image\":{\"a\":1}}",
			"{\"bad id\":1}",
			"{\"image\":null}",
		};
		static const char *const fields[] = { "settings.image", "settings.image",
						      "settings.bad id", "settings.image" };

		for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
			_cleanup_json_ json_t *b = json_loads(bad[i], 0, NULL);
			_cleanup_free_ char *after = NULL;

			is_int(-EINVAL, backend_settings_store_put(s, &ref_cloud, b, &err),
			       "put refuses %s", bad[i]);
			is_str(fields[i], err.field, "naming %s", fields[i]);
			after = read_raw(dir, "settings.json");
			ok(after && text && streq(after, text), "and writes nothing");
		}
	}
}

static void test_store_errors(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "perm"), *sp = NULL, *link = NULL;
	_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
	struct field_error err = { "", "" };

	if (mkdir(dir, 0755) < 0)
		bail("mkdir %s: %m", dir);
	is_int(-EPERM, backend_settings_store_open(dir, &s, NULL, &err),
	       "a directory open to others is refused");
	ok(strstr(err.reason, "group or others") && strstr(err.reason, "0755"), "saying why: %s",
	   err.reason);
	if (geteuid() == 0) {
		if (chmod(dir, 0700) < 0 || chown(dir, 65534, 65534) < 0)
			bail("chown %s: %m", dir);
		is_int(-EPERM, backend_settings_store_open(dir, &s, NULL, &err),
		       "a directory owned by someone else is refused");
		ok(strstr(err.reason, "owned by uid 65534") != NULL, "saying why: %s", err.reason);
		if (chown(dir, 0, 0) < 0)
			bail("chown: %m");
	} else {
		skip(2, "the ownership check needs root to chown");
		if (chmod(dir, 0700) < 0)
			bail("chmod: %m");
	}
	write_raw(dir, "settings.json", "{\"version\":1,\"backends\":{}}", 0644);
	is_int(-EPERM, backend_settings_store_open(dir, &s, NULL, &err),
	       "a settings.json readable by others is refused, not treated as corrupt");
	sp = tap_path_in(dir, "settings.json");
	is_int(1, tap_dir_entries(dir), "and left where it is");
	if (unlink(sp) < 0 || symlink("/etc/passwd", sp) < 0)
		bail("symlink: %m");
	is_int(-EPERM, backend_settings_store_open(dir, &s, NULL, &err),
	       "a symlinked settings.json is refused");
	ok(strstr(err.reason, "symlink") != NULL, "saying why: %s", err.reason);
	ok(!s, "no store on failure");
}

static void test_store_corrupt(const char *base)
{
	static const struct {
		const char *text, *field;
	} bad[] = {
		{ "{\"version\":1,\"backends\":{\"pack:org.example", "" },
		{ "", "" },
		{ "{\"version\":2,\"backends\":{}}", "version" },
		{ "{\"version\":1,\"backends\":{\"builtin:Auto\":{}}}", "backends.builtin:Auto" },
		{ "{\"version\":1,\"backends\":{\"builtin:vm\":{\"x\":[]}}}",
		  "backends.builtin:vm.x" },
		{ "{\"version\":1,\"backends\":{},\"extra\":1}", "extra" },
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		_cleanup_free_ char *name = strdup_printf("corrupt%zu", i);
		_cleanup_free_ char *dir = tap_path_in(base, name), *aside = NULL, *kept = NULL;
		_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
		_cleanup_json_ json_t *got = NULL;
		struct field_error err = { "", "" };
		int r;

		if (mkdir(dir, 0700) < 0)
			bail("mkdir: %m");
		write_raw(dir, "settings.json", bad[i].text, 0600);
		r = backend_settings_store_open(dir, &s, &aside, &err);
		is_int(1, r, "corrupt file %zu: open reports a recovery", i);
		is_str(bad[i].field, err.field, "corrupt file %zu: err names \"%s\" (%s)", i,
		       bad[i].field, err.reason);
		ok(aside && startswith(aside, dir) && strstr(aside, "/settings.json.corrupt-"),
		   "corrupt file %zu: moved aside to %s", i, aside ? aside : "(null)");
		if (!aside || read_full_file(aside, 1 << 20, &kept, NULL) < 0)
			kept = NULL;
		ok(kept && streq(kept, bad[i].text), "corrupt file %zu: the copy is intact", i);
		ok(s && backend_settings_store_get(s, &ref_cloud, &got) == 0,
		   "corrupt file %zu: the store starts empty", i);
		is_int(1, tap_dir_entries(dir),
		       "corrupt file %zu: only the copy is in the directory", i);
	}
}

static void test_store_failure(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "frozen"), *sp = NULL, *before = NULL;
	_cleanup_free_ char *after = NULL;
	_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
	_cleanup_json_ json_t *v1 = json_pack("{s:s}", "image", "one");
	_cleanup_json_ json_t *v2 = json_pack("{s:s}", "image", "two");
	_cleanup_json_ json_t *got = NULL;
	struct backend_active a = { .generation = 3 }, back;
	struct field_error err = { "", "" };
	int r;

	if (backend_settings_store_open(dir, &s, NULL, &err) < 0 ||
	    backend_settings_store_put(s, &ref_cloud, v1, &err) < 0)
		bail("store set-up: %s", err.reason);
	a.ref = ref_cloud;
	if (backend_active_save(s, &a, false) < 0)
		bail("active set-up");
	sp = tap_path_in(dir, "settings.json");
	before = read_raw(dir, "settings.json");

	/* The file itself cannot be replaced: the temp file is written, the rename fails. */
	r = freeze(sp, false, true);
	if (r < 0)
		skip(4, "cannot make a file immutable here (%s)", strerror(-r));
	else {
		r = backend_settings_store_put(s, &ref_cloud, v2, &err);
		(void)freeze(sp, false, false);
		ok(r < 0, "put fails when settings.json cannot be replaced (%d: %s)", r,
		   err.reason);
		after = read_raw(dir, "settings.json");
		ok(before && after && streq(before, after), "the previous file is intact");
		is_int(2, tap_dir_entries(dir), "the temp file is removed");
		backend_settings_store_get(s, &ref_cloud, &got);
		is_str("one", json_string_value(json_object_get(got, "image")),
		       "and the store still holds the previous settings");
		json_decref(TAKE_PTR(got));
		free(TAKE_PTR(after));
	}

	/* The directory refuses new entries: not even a temp file. */
	r = freeze(dir, true, true);
	if (r < 0)
		skip(6, "cannot make a directory unchangeable here (%s)", strerror(-r));
	else {
		struct backend_active b = { .ref = ref_other, .generation = 4 };

		r = backend_settings_store_put(s, &ref_cloud, v2, &err);
		ok(r < 0, "put fails in an unchangeable directory (%d)", r);
		r = backend_settings_store_purge(s, &ref_cloud);
		ok(r < 0, "so does purge (%d)", r);
		r = backend_active_save(s, &b, false);
		(void)freeze(dir, true, false);
		ok(r < 0, "and saving the active selection (%d)", r);
		after = read_raw(dir, "settings.json");
		ok(before && after && streq(before, after), "settings.json is intact");
		is_int(BACKEND_ACTIVE_LOADED, backend_active_load(s, false, &back, &err),
		       "active.json still loads");
		ok(backend_ref_equal(&back.ref, &ref_cloud) && back.generation == 3,
		   "with the previous selection");
	}
	is_int(2, tap_dir_entries(dir), "nothing but settings.json and active.json remains");
	is_int(0, backend_settings_store_put(s, &ref_cloud, v2, &err),
	       "once writable again, put works");
}

static void test_store_survives(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "survive");
	_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
	_cleanup_json_ json_t *v = json_pack("{s:s, s:i}", "image", "mine", "cpus", 8);
	_cleanup_json_ json_t *w = json_pack("{s:b}", "verbose", 1);
	_cleanup_json_ json_t *got = NULL;
	struct field_error err = { "", "" };

	if (backend_settings_store_open(dir, &s, NULL, &err) < 0 ||
	    backend_settings_store_put(s, &ref_cloud, v, &err) < 0 ||
	    backend_settings_store_put(s, &ref_other, w, &err) < 0)
		bail("store set-up");
	/* The pack is disabled and the controller restarts: the store is just reopened. */
	backend_settings_store_free(TAKE_PTR(s));
	is_int(0, backend_settings_store_open(dir, &s, NULL, &err), "reopen after \"disable\"");
	is_int(1, backend_settings_store_get(s, &ref_cloud, &got), "the settings are still there");
	ok(json_equal(v, got), "unchanged");
	json_decref(TAKE_PTR(got));

	is_int(1, backend_settings_store_purge(s, &ref_cloud), "an explicit purge removes them");
	is_int(0, backend_settings_store_purge(s, &ref_cloud), "a second purge finds nothing");
	backend_settings_store_free(TAKE_PTR(s));
	if (backend_settings_store_open(dir, &s, NULL, &err) < 0)
		bail("reopen");
	is_int(0, backend_settings_store_get(s, &ref_cloud, &got), "the purge is persistent");
	json_decref(TAKE_PTR(got));
	is_int(1, backend_settings_store_get(s, &ref_other, &got), "and touched no other backend");
}

/* A crash between the temp file and the rename leaves "name.tmp.XXXXXX": the start-up sweep
 * removes exactly those. */
static void test_store_stale(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "stale");
	_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
	static const char *const names[] = { "settings.json.tmp.AbC123", "active.json.tmp.zzzzzz",
					     "keep.tmp.toolong", ".tmp.abcdef", "keep" };
	struct field_error err = { "", "" };

	if (mkdir(dir, 0700) < 0)
		bail("mkdir: %m");
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		_cleanup_free_ char *p = tap_path_in(dir, names[i]);
		_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

		if (fd < 0)
			bail("create %s: %m", names[i]);
	}
	is_int(2, backend_state_remove_stale(dir), "the sweep removes two temp files");
	is_int(3, tap_dir_entries(dir), "the two temp files are gone, the rest is kept");
	is_int(0, backend_state_remove_stale(dir), "a second sweep finds nothing");
	is_int(0, backend_settings_store_open(dir, &s, NULL, &err), "the store opens after it");
}

static void test_active(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "active"), *text = NULL, *ap = NULL;
	_cleanup_backend_settings_store_ struct backend_settings_store *s = NULL;
	struct backend_active a = { .ref = ref_cloud, .generation = 7 }, back, host = { 0 };
	struct field_error err = { "", "" };
	struct stat st;
	char buf[BACKEND_REF_TEXT_MAX];

	if (backend_settings_store_open(dir, &s, NULL, &err) < 0)
		bail("open");
	ap = tap_path_in(dir, "active.json");
	is_int(BACKEND_ACTIVE_DEFAULT, backend_active_load(s, false, &back, &err),
	       "no active.json: the default");
	ok(backend_ref_format(&back.ref, buf, sizeof(buf)) == 0 && streq(buf, "builtin:auto") &&
		   back.generation == 0,
	   "which is builtin:auto, generation 0");

	is_int(0, backend_active_save(s, &a, false), "save a pack backend");
	ok(stat(ap, &st) == 0 && (st.st_mode & 07777) == 0600, "active.json is 0600");
	text = read_raw(dir, "active.json");
	{
		_cleanup_json_ json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
		_cleanup_json_ json_t *want = json_pack(
			"{s:s, s:i}", "backend", "pack:org.example.cloud:cloud", "generation", 7);

		ok(doc && json_equal(doc, want),
		   "the file is {\"backend\": <ref text>, \"generation\": N}");
	}
	is_int(BACKEND_ACTIVE_LOADED, backend_active_load(s, false, &back, &err), "load it back");
	ok(backend_ref_equal(&back.ref, &ref_cloud) && back.generation == 7, "round trip");
	is_int(1, tap_dir_entries(dir), "no temp file left behind");

	/* Torn writes: every proper prefix of the file is builtin:auto. */
	{
		size_t n = text ? strlen(text) : 0;
		bool all_auto = n > 0;

		while (n > 0 && text[n - 1] == '\n')
			n--; /* without the final newline it is still whole */

		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *cut = strndup(text, i);
			int r;

			write_raw(dir, "active.json", cut, 0600);
			r = backend_active_load(s, true, &back, &err);
			/* A prefix that still parses must not exist: the closing brace is last. */
			all_auto = all_auto && r == BACKEND_ACTIVE_FALLBACK &&
				   streq(back.ref.kind, "auto") &&
				   back.ref.source == BACKEND_SOURCE_BUILTIN &&
				   back.generation == 0;
		}
		ok(all_auto, "each of the %zu torn prefixes falls back to builtin:auto", n);
	}

	/* Never unconfined unless allowed. */
	if (backend_ref_parse("builtin:host", &host.ref) < 0)
		bail("parse");
	host.generation = 9;
	write_raw(dir, "active.json", text, 0600);
	is_int(-EPERM, backend_active_save(s, &host, false),
	       "saving builtin:host without the allowed flag is refused");
	is_int(BACKEND_ACTIVE_LOADED, backend_active_load(s, false, &back, &err),
	       "and the previous selection is kept");
	ok(backend_ref_equal(&back.ref, &ref_cloud) && back.generation == 7, "unchanged");
	is_int(0, backend_active_save(s, &host, true), "with the flag it is saved");
	is_int(BACKEND_ACTIVE_FALLBACK, backend_active_load(s, false, &back, &err),
	       "reading it back without the flag falls back");
	ok(!backend_ref_is_unconfined(&back.ref) && streq(back.ref.kind, "auto"),
	   "to builtin:auto");
	is_str("backend", err.field, "naming the field");
	is_int(BACKEND_ACTIVE_LOADED, backend_active_load(s, true, &back, &err),
	       "with the flag it reads back");
	ok(backend_ref_is_unconfined(&back.ref) && back.generation == 9, "as builtin:host");
	{
		_cleanup_free_ char *hosttext = read_raw(dir, "active.json");
		size_t n = hosttext ? strlen(hosttext) : 0;
		bool never = n > 0;

		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *cut = strndup(hosttext, i);

			write_raw(dir, "active.json", cut, 0600);
			never = never && backend_active_load(s, false, &back, &err) >= 0 &&
				!backend_ref_is_unconfined(&back.ref);
		}
		ok(never, "no prefix of a host selection decodes unconfined");
	}

	/* Other unusable files. */
	{
		static const char *const bad[] = {
			"",
			"{\"backend\":\"pack:Org:cloud\",\"generation\":1}",
			"{\"backend\":\"builtin:vm\",\"generation\":-1}",
			"{\"backend\":\"builtin:vm\",\"generation\":1.5}",
			"{\"backend\":\"builtin:vm\"}",
			"{\"backend\":{\"source\":\"builtin\",\"kind\":\"vm\"},\"generation\":1}",
			"{\"backend\":\"builtin:vm\",\"generation\":1,\"allowHost\":true}",
			"[\"builtin:vm\"]",
		};

		for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
			write_raw(dir, "active.json", bad[i], 0600);
			back.generation = 99;
			is_int(BACKEND_ACTIVE_FALLBACK, backend_active_load(s, true, &back, &err),
			       "%s falls back", bad[i]);
			ok(streq(back.ref.kind, "auto") && back.generation == 0,
			   "to builtin:auto generation 0 (%s)", err.reason);
		}
	}
	write_raw(dir, "active.json", "{\"backend\":\"builtin:vm\",\"generation\":1}", 0644);
	is_int(BACKEND_ACTIVE_FALLBACK, backend_active_load(s, true, &back, &err),
	       "an active.json readable by others falls back");
	ok(strstr(err.reason, "group or others") != NULL, "saying why: %s", err.reason);
}

int main(void)
{
	char base[] = "/tmp/cordon-test-settings.XXXXXX";
	struct field_error err = { "", "" };

	plan_lazy();
	umask(022);
	if (backend_descriptor_parse(descriptor_json, strlen(descriptor_json), 0, &desc, &err) < 0)
		bail("descriptor: %s: %s", err.field, err.reason);
	if (backend_ref_parse("pack:org.example.cloud:cloud", &ref_cloud) < 0 ||
	    backend_ref_parse("builtin:vm", &ref_other) < 0)
		bail("refs");
	if (!mkdtemp(base))
		bail("mkdtemp: %m");

	test_validate_ok();
	test_validate_rules();
	test_validate_edges();
	test_scrub_and_effective();
	test_store_basic(base);
	test_store_errors(base);
	test_store_corrupt(base);
	test_store_failure(base);
	test_store_survives(base);
	test_store_stale(base);
	test_active(base);

	backend_descriptor_free(desc);
	if (tap_rm_rf(base) < 0)
		diag("could not remove %s", base);
	return tap_exit_status();
}

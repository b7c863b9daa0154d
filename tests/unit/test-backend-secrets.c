/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The secret store: set / configured / resolve / clear / purge, persisted across reopen; the
 * files never hold the plaintext (the bytes are searched for, raw and base64); the key file's
 * creation, mode, owner, type and size checks; tampering, a value moved to another backend and
 * a wrong key all fail authentication; a missing key; a corrupt secrets.json; a persistence
 * failure changes nothing; wiping.
 *
 * Linked with -Wl,--wrap=free (backends/local.mk): __wrap_free() inspects a watched block
 * while it is still allocated, just before it is really freed, so the test can see that the
 * plaintext was zeroed without reading freed memory.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "tests/tap.h"

void __real_free(void *p);
void __wrap_free(void *p);

static const void *watched;
static size_t watched_len;
static int watch_result = -1; /* -1 not seen, 0 not wiped, 1 wiped */

void __wrap_free(void *p)
{
	if (p && p == watched) {
		const unsigned char *b = p;
		bool zero = true;

		for (size_t i = 0; i < watched_len; i++)
			zero = zero && b[i] == 0;
		watch_result = zero;
		watched = NULL;
	}
	__real_free(p);
}

static void (*volatile do_free)(void *) = free;

static void watch(const void *p, size_t len)
{
	watched = p;
	watched_len = len;
	watch_result = -1;
}

#define PLAIN "hunter2-\xc3\xa9-correct-horse-battery-staple"

static struct backend_ref ref_a, ref_b;

static char *read_raw(const char *dir, const char *name, size_t *len)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);
	char *buf = NULL;

	if (read_full_file(p, 1 << 20, &buf, len) < 0)
		return NULL;
	return buf;
}

static void write_raw(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);

	if (write_file_atomic(p, data, len, mode) < 0)
		bail("cannot write %s", p);
}

static bool contains(const char *buf, size_t len, const char *needle)
{
	return memmem(buf, len, needle, strlen(needle)) != NULL;
}

/* Does any file of dir contain needle (raw, or base64 at any of the three alignments)? */
static bool dir_contains(const char *dir, const char *needle)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	if (!d)
		bail("opendir %s", dir);
	while ((de = readdir(d))) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;

		if (de->d_name[0] == '.')
			continue;
		buf = read_raw(dir, de->d_name, &len);
		if (!buf)
			continue;
		found = found || contains(buf, len, needle);
		for (size_t skip = 0; skip < 3; skip++) {
			_cleanup_free_ char *b64 =
				base64_encode(needle + skip, strlen(needle) - skip);

			/* The middle of an encoding does not depend on what surrounds it. */
			if (b64 && strlen(b64) > 8) {
				b64[strlen(b64) - 4] = '\0';
				found = found || contains(buf, len, b64 + 4);
			}
		}
	}
	closedir(d);
	return found;
}

/* Replace the stored value of ref/field in secrets.json by f(value). */
static void edit_value(const char *dir, const char *ref, const char *field,
		       void (*f)(unsigned char *raw, size_t n))
{
	_cleanup_free_ char *text = read_raw(dir, "secrets.json", NULL);
	_cleanup_json_ json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	_cleanup_free_ void *raw = NULL;
	_cleanup_free_ char *b64 = NULL, *out = NULL;
	json_t *fields, *v;
	size_t n = 0;

	fields = json_object_get(json_object_get(doc, "values"), ref);
	v = json_object_get(fields, field);
	if (!v || base64_decode(json_string_value(v), json_string_length(v), &raw, &n) < 0)
		bail("no value %s/%s", ref, field);
	f(raw, n);
	b64 = base64_encode(raw, n);
	if (!b64 || json_object_set_new(fields, field, json_string(b64)) < 0)
		bail("out of memory");
	out = json_dumps(doc, 0);
	if (!out)
		bail("out of memory");
	write_raw(dir, "secrets.json", out, strlen(out), 0600);
}

static void flip_last(unsigned char *raw, size_t n)
{
	raw[n - 1] ^= 0x01;
}

static void flip_nonce(unsigned char *raw, size_t n)
{
	raw[0] ^= 0x80;
}

static int open_store(const char *dir, struct backend_secrets **s)
{
	struct field_error err = { "", "" };
	int r = backend_secrets_open(dir, s, NULL, &err);

	if (r != 0)
		bail("open %s: %d %s", dir, r, err.reason);
	return r;
}

static void test_roundtrip(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "rt"), *kp = NULL, *text = NULL;
	_cleanup_backend_secrets_ struct backend_secrets *s = NULL;
	_cleanup_secret_ char *got = NULL;
	struct field_error err = { "", "" };
	struct stat st;
	char big[BACKEND_SETTING_VALUE_MAX + 2];

	open_store(dir, &s);
	kp = tap_path_in(dir, "secrets.key");
	ok(!backend_secrets_configured(s, &ref_a, "apiKey"), "nothing configured at first");
	is_int(-ENOENT, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "resolving nothing is -ENOENT");
	is_str("apiKey", err.field, "naming the field");
	ok(strstr(err.reason, "pack:org.example.cloud:cloud") != NULL, "and the backend: %s",
	   err.reason);
	ok(access(kp, F_OK) < 0, "no key is made before a value is set");

	is_int(-EINVAL, backend_secrets_set(s, &ref_a, "apiKey", "", &err),
	       "an empty value is refused");
	is_int(-EINVAL, backend_secrets_set(s, &ref_a, "apiKey", NULL, &err), "so is NULL");
	is_int(-EINVAL, backend_secrets_set(s, &ref_a, "api key", "x", &err), "and a bad field id");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	is_int(-E2BIG, backend_secrets_set(s, &ref_a, "apiKey", big, &err),
	       "and a value over %d bytes", BACKEND_SETTING_VALUE_MAX);
	is_int(0, tap_dir_entries(dir), "none of which wrote anything");

	is_int(0, backend_secrets_set(s, &ref_a, "apiKey", PLAIN, &err), "set");
	ok(backend_secrets_configured(s, &ref_a, "apiKey"), "configured");
	ok(!backend_secrets_configured(s, &ref_b, "apiKey"),
	   "not for another backend with the same field");
	ok(!backend_secrets_configured(s, &ref_a, "other"), "nor another field");
	is_int(0, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err), "resolve");
	is_str(PLAIN, got, "gives the value back");

	ok(stat(kp, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 &&
		   st.st_uid == geteuid() && st.st_size == 32,
	   "secrets.key: 32 bytes, 0600, ours");
	{
		_cleanup_free_ char *sp = tap_path_in(dir, "secrets.json");

		ok(stat(sp, &st) == 0 && (st.st_mode & 07777) == 0600, "secrets.json is 0600");
	}
	is_int(2, tap_dir_entries(dir), "just secrets.json and secrets.key: no temp files");
	ok(!dir_contains(dir, PLAIN) && !dir_contains(dir, "correct-horse"),
	   "no file holds the plaintext, raw or base64");
	text = read_raw(dir, "secrets.json", NULL);
	{
		_cleanup_json_ json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
		json_t *v = json_object_get(json_object_get(json_object_get(doc, "values"),
							    "pack:org.example.cloud:cloud"),
					    "apiKey");
		_cleanup_free_ void *raw = NULL;
		size_t n = 0;

		ok(doc && json_integer_value(json_object_get(doc, "version")) == 1 &&
			   streq_ptr(json_string_value(json_object_get(doc, "cipher")),
				     "xsalsa20poly1305"),
		   "secrets.json names its version and cipher");
		ok(v && base64_decode(json_string_value(v), json_string_length(v), &raw, &n) == 0 &&
			   n == crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES +
					   strlen(PLAIN),
		   "a value is base64(nonce ‖ ciphertext ‖ tag)");
	}

	/* The same value again: a fresh nonce, a different file. */
	is_int(0, backend_secrets_set(s, &ref_a, "apiKey", PLAIN, &err), "set the same again");
	{
		_cleanup_free_ char *again = read_raw(dir, "secrets.json", NULL);

		ok(text && again && !streq(text, again), "the ciphertext differs (random nonce)");
	}
	memset(big, 'y', BACKEND_SETTING_VALUE_MAX);
	big[BACKEND_SETTING_VALUE_MAX] = '\0';
	is_int(0, backend_secrets_set(s, &ref_a, "long", big, &err), "a %d-byte value is accepted",
	       BACKEND_SETTING_VALUE_MAX);
	is_int(0, backend_secrets_set(s, &ref_b, "apiKey", "other-value", &err),
	       "another backend's value");

	/* Persistence. */
	backend_secrets_free(TAKE_PTR(s));
	open_store(dir, &s);
	ok(backend_secrets_configured(s, &ref_a, "apiKey"), "configured after reopening");
	backend_secret_free(TAKE_PTR(got));
	is_int(0, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "and resolves with the stored key");
	is_str(PLAIN, got, "to the same value");
	backend_secret_free(TAKE_PTR(got));
	ok(backend_secrets_resolve(s, &ref_a, "long", &got, &err) == 0 && got &&
		   strlen(got) == BACKEND_SETTING_VALUE_MAX,
	   "the longest value too");
	backend_secret_free(TAKE_PTR(got));

	/* Clear and purge. */
	is_int(1, backend_secrets_clear(s, &ref_a, "apiKey", &err), "clear removes");
	ok(!backend_secrets_configured(s, &ref_a, "apiKey"), "not configured any more");
	is_int(0, backend_secrets_clear(s, &ref_a, "apiKey", &err), "clearing again: 0");
	is_int(-ENOENT, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "resolve: -ENOENT");
	ok(backend_secrets_configured(s, &ref_a, "long") &&
		   backend_secrets_configured(s, &ref_b, "apiKey"),
	   "other values stay");
	is_int(1, backend_secrets_purge(s, &ref_a, &err), "purge a backend");
	is_int(0, backend_secrets_purge(s, &ref_a, &err), "purging again: 0");
	backend_secrets_free(TAKE_PTR(s));
	open_store(dir, &s);
	ok(!backend_secrets_configured(s, &ref_a, "apiKey") &&
		   !backend_secrets_configured(s, &ref_a, "long") &&
		   backend_secrets_configured(s, &ref_b, "apiKey"),
	   "clear and purge are persistent and touch nothing else");
}

static void test_tamper(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "tamper"), *good = NULL;
	_cleanup_backend_secrets_ struct backend_secrets *s = NULL;
	struct field_error err = { "", "" };
	char *got = NULL;
	size_t good_len = 0;

	open_store(dir, &s);
	if (backend_secrets_set(s, &ref_a, "apiKey", PLAIN, &err) < 0 ||
	    backend_secrets_set(s, &ref_b, "apiKey", "b-value", &err) < 0)
		bail("set");
	backend_secrets_free(TAKE_PTR(s));
	good = read_raw(dir, "secrets.json", &good_len);

	edit_value(dir, "pack:org.example.cloud:cloud", "apiKey", flip_last);
	open_store(dir, &s);
	is_int(-EBADMSG, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "a flipped ciphertext bit is detected");
	ok(!got, "and nothing is returned");
	is_str("apiKey", err.field, "the error names the field");
	ok(strstr(err.reason, "pack:org.example.cloud:cloud") && !strstr(err.reason, "hunter2"),
	   "and the backend, never the value: %s", err.reason);
	ok(backend_secrets_resolve(s, &ref_b, "apiKey", &got, &err) == 0 && streq(got, "b-value"),
	   "other values still resolve");
	backend_secret_free(TAKE_PTR(got));
	backend_secrets_free(TAKE_PTR(s));

	write_raw(dir, "secrets.json", good, good_len, 0600);
	edit_value(dir, "pack:org.example.cloud:cloud", "apiKey", flip_nonce);
	open_store(dir, &s);
	is_int(-EBADMSG, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "a flipped nonce bit is detected");
	backend_secrets_free(TAKE_PTR(s));

	/* Move A's sealed value into B's place: authentication binds it to A's ref and field. */
	{
		_cleanup_json_ json_t *doc = json_loadb(good, good_len, 0, NULL);
		json_t *values = json_object_get(doc, "values");
		json_t *va = json_object_get(
			json_object_get(values, "pack:org.example.cloud:cloud"), "apiKey");
		_cleanup_free_ char *out = NULL;

		if (!va ||
		    json_object_set(json_object_get(values, "builtin:vm"), "apiKey", va) < 0 ||
		    json_object_set(json_object_get(values, "pack:org.example.cloud:cloud"),
				    "token", va) < 0)
			bail("edit");
		out = json_dumps(doc, 0);
		write_raw(dir, "secrets.json", out, strlen(out), 0600);
	}
	open_store(dir, &s);
	is_int(-EBADMSG, backend_secrets_resolve(s, &ref_b, "apiKey", &got, &err),
	       "a value moved to another backend does not decrypt");
	is_int(-EBADMSG, backend_secrets_resolve(s, &ref_a, "token", &got, &err),
	       "nor one moved to another field");
	ok(backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err) == 0 && streq(got, PLAIN),
	   "while it still resolves where it belongs");
	backend_secret_free(TAKE_PTR(got));
	backend_secrets_free(TAKE_PTR(s));

	/* A different key. */
	{
		unsigned char key[32];
		_cleanup_free_ char *kp = tap_path_in(dir, "secrets.key");

		write_raw(dir, "secrets.json", good, good_len, 0600);
		randombytes_buf(key, sizeof(key));
		if (unlink(kp) < 0)
			bail("unlink: %m");
		write_raw(dir, "secrets.key", key, sizeof(key), 0600);
		open_store(dir, &s);
		is_int(-EBADMSG, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
		       "a wrong key is detected");
		ok(strstr(err.reason, "wrong key or tampered file") != NULL, "clearly: %s",
		   err.reason);
		backend_secrets_free(TAKE_PTR(s));
	}
}

static void test_key_file(const char *base)
{
	static const mode_t modes[] = { 0644, 0640, 0604, 0620, 0602 };
	_cleanup_free_ char *dir = tap_path_in(base, "key"), *kp = NULL, *key = NULL;
	_cleanup_backend_secrets_ struct backend_secrets *s = NULL;
	struct field_error err = { "", "" };
	char *got = NULL;
	size_t key_len = 0;

	open_store(dir, &s);
	if (backend_secrets_set(s, &ref_a, "apiKey", PLAIN, &err) < 0)
		bail("set");
	backend_secrets_free(TAKE_PTR(s));
	kp = tap_path_in(dir, "secrets.key");
	key = read_raw(dir, "secrets.key", &key_len);

	for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
		if (chmod(kp, modes[i]) < 0)
			bail("chmod: %m");
		open_store(dir, &s);
		is_int(-EPERM, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
		       "a key file with mode %04o is refused for resolve", modes[i]);
		is_int(-EPERM, backend_secrets_set(s, &ref_a, "apiKey", "new", &err),
		       "and for set (%04o)", modes[i]);
		ok(strstr(err.reason, "secrets.key") && strstr(err.reason, "group or others"),
		   "saying why: %s", err.reason);
		backend_secrets_free(TAKE_PTR(s));
	}
	if (chmod(kp, 0400) < 0)
		bail("chmod: %m");
	open_store(dir, &s);
	ok(backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err) == 0 && streq(got, PLAIN),
	   "a 0400 key file is fine");
	backend_secret_free(TAKE_PTR(got));
	backend_secrets_free(TAKE_PTR(s));
	if (chmod(kp, 0600) < 0)
		bail("chmod: %m");

	if (geteuid() == 0) {
		if (chown(kp, 65534, 65534) < 0)
			bail("chown: %m");
		open_store(dir, &s);
		is_int(-EPERM, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
		       "a key file owned by someone else is refused");
		ok(strstr(err.reason, "owned by uid 65534") != NULL, "saying why: %s", err.reason);
		backend_secrets_free(TAKE_PTR(s));
		if (chown(kp, 0, 0) < 0)
			bail("chown: %m");
	} else
		skip(2, "the ownership check needs root to chown");

	/* A symlink to a perfectly good key is refused too. */
	{
		_cleanup_free_ char *real = tap_path_in(base, "key-elsewhere");

		write_raw(base, "key-elsewhere", key, key_len, 0600);
		if (unlink(kp) < 0 || symlink(real, kp) < 0)
			bail("symlink: %m");
		open_store(dir, &s);
		is_int(-EPERM, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
		       "a symlinked key file is refused");
		backend_secrets_free(TAKE_PTR(s));
		if (unlink(kp) < 0)
			bail("unlink: %m");
	}

	/* Wrong sizes. */
	write_raw(dir, "secrets.key", key, key_len - 1, 0600);
	open_store(dir, &s);
	is_int(-EBADMSG, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "a 31-byte key file is refused");
	backend_secrets_free(TAKE_PTR(s));
	{
		char longer[33];

		memcpy(longer, key, 32);
		longer[32] = 'x';
		write_raw(dir, "secrets.key", longer, sizeof(longer), 0600);
	}
	open_store(dir, &s);
	is_int(-EBADMSG, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "a 33-byte key file is refused");
	backend_secrets_free(TAKE_PTR(s));

	/* Missing while values exist: never silently replaced. */
	if (unlink(kp) < 0)
		bail("unlink: %m");
	open_store(dir, &s);
	is_int(-ENOKEY, backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err),
	       "a missing key file is -ENOKEY for resolve");
	is_int(-ENOKEY, backend_secrets_set(s, &ref_a, "other", "v", &err),
	       "and for set while values exist");
	ok(access(kp, F_OK) < 0, "no new key was made");
	backend_secrets_free(TAKE_PTR(s));

	write_raw(dir, "secrets.key", key, key_len, 0600);
	open_store(dir, &s);
	ok(backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err) == 0 && streq(got, PLAIN),
	   "with the right key back everything resolves");
	backend_secret_free(TAKE_PTR(got));
}

static void test_corrupt(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "corrupt"), *aside = NULL, *kept = NULL;
	_cleanup_backend_secrets_ struct backend_secrets *s = NULL;
	struct field_error err = { "", "" };
	static const char junk[] = "{\"version\":1,\"cipher\":\"xsalsa20poly1305\",\"values\":{"
				   "\"builtin:vm\":{\"k\":\"not base64!\"}}}";

	if (mkdir(dir, 0700) < 0)
		bail("mkdir: %m");
	write_raw(dir, "secrets.json", junk, strlen(junk), 0600);
	is_int(1, backend_secrets_open(dir, &s, &aside, &err),
	       "a corrupt secrets.json is reported");
	is_str("values.builtin:vm.k", err.field, "naming what is wrong (%s)", err.reason);
	ok(aside && read_full_file(aside, 4096, &kept, NULL) == 0 && streq(kept, junk),
	   "it was moved aside intact (%s)", aside ? aside : "(null)");
	ok(s && !backend_secrets_configured(s, &ref_b, "k"), "the store starts empty");
	backend_secrets_free(TAKE_PTR(s));

	write_raw(dir, "secrets.json", "{}", 2, 0644);
	is_int(-EPERM, backend_secrets_open(dir, &s, NULL, &err),
	       "a secrets.json open to others is refused");
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

/* As in test-backend-settings.c: chmod 0500 for a user, the immutable attribute for root. */
static int freeze_dir(const char *dir, bool on)
{
	if (geteuid() != 0)
		return chmod(dir, on ? 0500 : 0700) < 0 ? -errno : 0;
	return set_immutable(dir, on);
}

static void test_failure(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "frozen"), *before = NULL, *after = NULL;
	_cleanup_backend_secrets_ struct backend_secrets *s = NULL;
	struct field_error err = { "", "" };
	char *got = NULL;
	int r;

	open_store(dir, &s);
	if (backend_secrets_set(s, &ref_a, "apiKey", PLAIN, &err) < 0)
		bail("set");
	before = read_raw(dir, "secrets.json", NULL);
	r = freeze_dir(dir, true);
	if (r < 0) {
		skip(6, "cannot make a directory unchangeable here (%s)", strerror(-r));
		return;
	}
	r = backend_secrets_set(s, &ref_a, "apiKey", "replacement", &err);
	ok(r < 0, "set fails when secrets.json cannot be replaced (%d)", r);
	ok(strstr(err.reason, "pack:org.example.cloud:cloud") && !strstr(err.reason, "replacement"),
	   "the error names the backend, not the value: %s", err.reason);
	r = backend_secrets_clear(s, &ref_a, "apiKey", &err);
	(void)freeze_dir(dir, false);
	ok(r < 0, "clear fails too (%d)", r);
	after = read_raw(dir, "secrets.json", NULL);
	ok(before && after && streq(before, after), "secrets.json is intact");
	ok(backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err) == 0 && streq(got, PLAIN),
	   "and the store still resolves the previous value");
	backend_secret_free(got);
	is_int(2, tap_dir_entries(dir), "no temp file is left");
}

static void test_wipe(const char *base)
{
	_cleanup_free_ char *dir = tap_path_in(base, "wipe");
	_cleanup_backend_secrets_ struct backend_secrets *s = NULL;
	struct field_error err = { "", "" };
	char *got = NULL, *plain;
	size_t len;

	/* The detector itself: a block freed with its content is seen as not wiped. (Through a
	 * volatile pointer, or the compiler may drop the malloc/free pair altogether.) */
	plain = malloc(16);
	if (!plain)
		bail("out of memory");
	memcpy(plain, "not wiped", 10);
	watch(plain, 10);
	do_free(plain);
	is_int(0, watch_result, "the free() hook sees a block that was not wiped");

	open_store(dir, &s);
	if (backend_secrets_set(s, &ref_a, "apiKey", PLAIN, &err) < 0 ||
	    backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err) < 0)
		bail("set/resolve");
	ok(((uintptr_t)got % (uintptr_t)sysconf(_SC_PAGESIZE)) == 0,
	   "a resolved secret starts a page of its own");
	len = strlen(got);
	watch(got, len + 1);
	backend_secret_free(got);
	is_int(1, watch_result, "backend_secret_free() zeroes the plaintext before free()");

	if (backend_secrets_resolve(s, &ref_a, "apiKey", &got, &err) < 0)
		bail("resolve");
	len = strlen(got);
	got[3] = '\0'; /* the caller shortened it */
	watch(got, len + 1);
	backend_secret_free(got);
	is_int(1, watch_result, "even past a NUL the caller wrote into it");

	{
		_cleanup_secret_ char *scoped = NULL;

		if (backend_secrets_resolve(s, &ref_a, "apiKey", &scoped, &err) < 0)
			bail("resolve");
		watch(scoped, strlen(scoped) + 1);
	}
	is_int(1, watch_result, "_cleanup_secret_ wipes at the end of the scope");

	/* The settings layer's split-out secrets are wiped by ..._update_done(). */
	{
		static const char dj[] = "{\"kind\":\"k\",\"name\":\"K\",\"description\":\"\","
					 "\"settings\":{\"fields\":[{\"id\":\"apiKey\","
					 "\"type\":\"secret\",\"label\":\"Key\"}]},"
					 "\"claims\":{\"platforms\":[\"linux\"],\"enforces\":[],"
					 "\"isolation\":\"remote\"}}";
		_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
		_cleanup_json_ json_t *c = json_pack("{s:s}", "apiKey", "split-out-value");
		struct backend_settings_update u = { 0 };

		if (backend_descriptor_parse(dj, strlen(dj), 0, &d, &err) < 0 ||
		    backend_settings_validate(d, c, NULL, NULL, NULL, &u, &err) < 0 ||
		    u.n_secrets != 1)
			bail("validate");
		watch(u.secrets[0].value, strlen(u.secrets[0].value) + 1);
		backend_settings_update_done(&u);
		is_int(1, watch_result, "backend_settings_update_done() wipes split-out secrets");
	}

	plain = backend_secret_strndup("abc", 3);
	ok(plain && streq(plain, "abc"), "backend_secret_strndup copies and terminates");
	backend_secret_free(plain);
	backend_secret_free(NULL);
	ok(true, "backend_secret_free(NULL) is a no-op");
}

int main(void)
{
	char base[] = "/tmp/cordon-test-secrets.XXXXXX";

	plan_lazy();
	umask(022);
	if (backend_ref_parse("pack:org.example.cloud:cloud", &ref_a) < 0 ||
	    backend_ref_parse("builtin:vm", &ref_b) < 0)
		bail("refs");
	if (!mkdtemp(base))
		bail("mkdtemp: %m");

	test_roundtrip(base);
	test_tamper(base);
	test_key_file(base);
	test_corrupt(base);
	test_failure(base);
	test_wipe(base);

	if (tap_rm_rf(base) < 0)
		diag("could not remove %s", base);
	return tap_exit_status();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "backends/backend-state.h"

#define SECRETS_FILE "secrets.json"
#define KEY_FILE "secrets.key"
#define SECRETS_VERSION 1
#define SECRETS_CIPHER "xsalsa20poly1305"
#define KEY_BYTES crypto_secretbox_KEYBYTES
#define SEALED_MIN (crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + 1)
#define SEALED_MAX \
	(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + BACKEND_SETTING_VALUE_MAX)

struct backend_secrets {
	char *dir;
	json_t *values;	    /* ref text → {field → base64(nonce ‖ ciphertext)} */
	unsigned char *key; /* sodium_malloc()ed, KEY_BYTES; NULL until needed */
};

char *backend_secret_alloc(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size;
	void *p = NULL;

	if (page <= 0)
		page = 4096;
	if (size_add_overflow(len, 1 + (size_t)page - 1, &size))
		return NULL;
	size -= size % (size_t)page;
	if (posix_memalign(&p, (size_t)page, size) != 0)
		return NULL;
	memset(p, 0, size);
	/* Best effort: RLIMIT_MEMLOCK may say no (EPERM/ENOMEM); the wipe on free still holds. */
	(void)sodium_mlock(p, size);
	return p;
}

char *backend_secret_strndup(const char *s, size_t len)
{
	char *p = backend_secret_alloc(len);

	if (p)
		memcpy(p, s, len);
	return p;
}

void backend_secret_free(char *p)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size;

	if (!p)
		return;
	if (page <= 0)
		page = 4096;
	/* The whole allocation, not strlen(): the caller may have shortened the string. */
	size = malloc_usable_size(p);
	sodium_memzero(p, size);
	/* Unlock only whole pages of ours (the allocation is page-aligned and page-sized; the
	 * usable size may reach a little past it). */
	size -= size % (size_t)page;
	if (size > 0)
		(void)sodium_munlock(p, size);
	free(p);
}

static int ref_key(const struct backend_ref *ref, char key[static BACKEND_REF_TEXT_MAX])
{
	return backend_ref_format(ref, key, BACKEND_REF_TEXT_MAX);
}

static int check_field(const char *field, struct field_error *err)
{
	if (!backend_field_id_is_valid(field))
		return field_error_set(err, -EINVAL, "", NULL, "not a valid field id");
	return 0;
}

/* secrets.json: {"version": 1, "cipher": …, "values": {ref: {field: base64}}}. */
static int parse_secrets_file(const char *buf, size_t len, json_t **ret, struct field_error *err)
{
	static const char *const keys[] = { "version", "cipher", "values", NULL };
	_cleanup_json_ json_t *doc = NULL;
	json_t *values = NULL, *fields;
	const char *cipher = NULL, *rk;
	int r;

	r = backend_state_parse_doc(buf, len, keys, SECRETS_VERSION, &doc, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(doc, "cipher", true, "", &cipher, err);
	if (r < 0)
		return r;
	if (!streq(cipher, SECRETS_CIPHER))
		return field_error_set(err, -EINVAL, "cipher", NULL, "expected \"%s\"",
				       SECRETS_CIPHER);
	r = ipc_json_get_object(doc, "values", true, "", &values, err);
	if (r < 0)
		return r;
	json_object_foreach(values, rk, fields) {
		const char *fk;
		char p[256];
		json_t *v;

		json_path_join(p, sizeof(p), "values", rk);
		r = backend_state_check_ref_key(rk, p, err);
		if (r < 0)
			return r;
		if (!json_is_object(fields))
			return field_error_set(err, -EINVAL, p, NULL, "expected an object");
		json_object_foreach(fields, fk, v) {
			_cleanup_free_ void *raw = NULL;
			size_t n = 0;
			char q[256];

			json_path_join(q, sizeof(q), p, fk);
			if (!backend_field_id_is_valid(fk))
				return field_error_set(err, -EINVAL, q, NULL,
						       "not a valid field id");
			if (!json_is_string(v) ||
			    base64_decode(json_string_value(v), json_string_length(v), &raw, &n) <
				    0 ||
			    n < SEALED_MIN || n > SEALED_MAX)
				return field_error_set(
					err, -EINVAL, q, NULL,
					"not a sealed value (base64 of nonce and ciphertext)");
		}
	}
	*ret = json_incref(values);
	return 0;
}

int backend_secrets_open(const char *dir, struct backend_secrets **ret, char **ret_aside,
			 struct field_error *err)
{
	_cleanup_free_ struct backend_secrets *s = NULL;
	int r;

	if (sodium_init() < 0)
		return field_error_set(err, -EIO, "", NULL, "libsodium cannot be initialized");
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = strdup(dir);
	if (!s->dir)
		return -ENOMEM;
	r = backend_state_load(dir, SECRETS_FILE, parse_secrets_file, &s->values, ret_aside, err);
	if (r < 0) {
		free(s->dir);
		return r;
	}
	*ret = TAKE_PTR(s);
	return r;
}

void backend_secrets_free(struct backend_secrets *s)
{
	if (!s)
		return;
	if (s->key)
		sodium_free(s->key); /* zeroes it */
	json_decref(s->values);
	free(s->dir);
	free(s);
}

static size_t values_count(json_t *values)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	json_object_foreach(values, k, v)
		n += json_object_size(v);
	return n;
}

/* Read and check secrets.key into s->key. */
static int key_load(struct backend_secrets *s, struct field_error *err)
{
	_cleanup_close_ int fd = -1;
	unsigned char *key;
	ssize_t n;
	int r;

	r = backend_state_file_open(s->dir, KEY_FILE, "key file", &fd, err);
	if (r < 0)
		return r;
	key = sodium_malloc(KEY_BYTES + 1);
	if (!key)
		return -ENOMEM;
	/* One byte more than a key, to notice a longer file. */
	n = loop_read(fd, key, KEY_BYTES + 1);
	if (n != KEY_BYTES) {
		sodium_free(key);
		if (n < 0)
			return field_error_set(err, (int)n, "", NULL, "cannot read \"%s/%s\": %s",
					       s->dir, KEY_FILE, strerror((int)-n));
		return field_error_set(err, -EBADMSG, "", NULL,
				       "key file \"%s/%s\" does not hold exactly %d bytes", s->dir,
				       KEY_FILE, (int)KEY_BYTES);
	}
	s->key = key;
	return 0;
}

/* Make secrets.key: a temp file created with O_EXCL (mkostemp), filled and synced, then link()ed
 * into place, which fails with EEXIST rather than replace a key someone else made first. */
static int key_create(struct backend_secrets *s)
{
	_cleanup_free_ char *path = strdup_printf("%s/%s", s->dir, KEY_FILE);
	_cleanup_free_ char *tmp = strdup_printf("%s/%s.tmp.XXXXXX", s->dir, KEY_FILE);
	unsigned char key[KEY_BYTES];
	_cleanup_close_ int fd = -1, dfd = -1;
	int r;

	if (!path || !tmp)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0)
		return -errno;
	randombytes_buf(key, sizeof(key));
	r = loop_write(fd, key, sizeof(key));
	sodium_memzero(key, sizeof(key));
	if (r >= 0 && fchmod(fd, 0600) < 0)
		r = -errno;
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && link(tmp, path) < 0)
		r = -errno;
	(void)unlink(tmp);
	if (r < 0)
		return r;
	dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		return -errno;
	return 0;
}

static int key_get(struct backend_secrets *s, bool create, struct field_error *err)
{
	int r;

	if (s->key)
		return 0;
	r = key_load(s, err);
	if (r != -ENOENT)
		return r;
	if (!create || values_count(s->values) > 0)
		return field_error_set(err, -ENOKEY, "", NULL,
				       "%s/%s is missing; %zu stored secret(s) cannot be decrypted",
				       s->dir, KEY_FILE, values_count(s->values));
	r = key_create(s);
	if (r < 0 && r != -EEXIST)
		return field_error_set(err, r, "", NULL, "cannot create %s/%s: %s", s->dir,
				       KEY_FILE, strerror(-r));
	return key_load(s, err);
}

/* The per-value key: BLAKE2b-256 keyed with the store key over "cordon-secret-v1\0ref\0field". */
static int value_key(struct backend_secrets *s, const char *ref, const char *field,
		     unsigned char out[static KEY_BYTES])
{
	static const char context[] = "cordon-secret-v1";
	crypto_generichash_state st;
	int r;

	r = crypto_generichash_init(&st, s->key, KEY_BYTES, KEY_BYTES);
	if (r == 0)
		r = crypto_generichash_update(&st, (const unsigned char *)context, sizeof(context));
	if (r == 0)
		r = crypto_generichash_update(&st, (const unsigned char *)ref, strlen(ref) + 1);
	if (r == 0)
		r = crypto_generichash_update(&st, (const unsigned char *)field, strlen(field));
	if (r == 0)
		r = crypto_generichash_final(&st, out, KEY_BYTES);
	sodium_memzero(&st, sizeof(st));
	return r == 0 ? 0 : -EIO;
}

static int values_write(struct backend_secrets *s, json_t *values)
{
	_cleanup_json_ json_t *doc = NULL;

	doc = json_pack("{s:i, s:s, s:O}", "version", SECRETS_VERSION, "cipher", SECRETS_CIPHER,
			"values", values);
	if (!doc)
		return -ENOMEM;
	return backend_state_json_write(s->dir, SECRETS_FILE, doc);
}

int backend_secrets_set(struct backend_secrets *s, const struct backend_ref *ref, const char *field,
			const char *value, struct field_error *err)
{
	unsigned char vkey[KEY_BYTES];
	_cleanup_free_ unsigned char *sealed = NULL;
	_cleanup_free_ char *b64 = NULL;
	_cleanup_json_ json_t *next = NULL;
	char rk[BACKEND_REF_TEXT_MAX];
	json_t *fields;
	size_t len;
	int r;

	r = ref_key(ref, rk);
	if (r < 0)
		return r;
	r = check_field(field, err);
	if (r < 0)
		return r;
	len = value ? strlen(value) : 0;
	if (len == 0)
		return field_error_set(err, -EINVAL, field, NULL,
				       "an empty secret of %s cannot be stored", rk);
	if (len > BACKEND_SETTING_VALUE_MAX)
		return field_error_set(err, -E2BIG, field, NULL,
				       "secret of %s is longer than %d bytes", rk,
				       BACKEND_SETTING_VALUE_MAX);
	r = key_get(s, true, err);
	if (r < 0)
		return r;

	sealed = malloc(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + len);
	if (!sealed)
		return -ENOMEM;
	randombytes_buf(sealed, crypto_secretbox_NONCEBYTES);
	r = value_key(s, rk, field, vkey);
	if (r >= 0)
		r = crypto_secretbox_easy(sealed + crypto_secretbox_NONCEBYTES,
					  (const unsigned char *)value, len, sealed, vkey) == 0
			    ? 0
			    : -EIO;
	sodium_memzero(vkey, sizeof(vkey));
	if (r < 0)
		return field_error_set(err, r, field, NULL, "cannot encrypt the secret of %s", rk);
	b64 = base64_encode(sealed, crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + len);
	if (!b64)
		return -ENOMEM;

	next = json_deep_copy(s->values);
	if (!next)
		return -ENOMEM;
	fields = json_object_get(next, rk);
	if (!fields) {
		fields = json_object();
		if (json_object_set_new(next, rk, fields) < 0)
			return -ENOMEM;
	}
	if (json_object_set_new(fields, field, json_string(b64)) < 0)
		return -ENOMEM;
	r = values_write(s, next);
	if (r < 0)
		return field_error_set(err, r, field, NULL, "cannot store the secret of %s: %s", rk,
				       strerror(-r));
	json_decref(s->values);
	s->values = TAKE_PTR(next);
	return 0;
}

/* Remove field (or, field NULL, every field) of ref. */
static int remove_values(struct backend_secrets *s, const struct backend_ref *ref,
			 const char *field, struct field_error *err)
{
	_cleanup_json_ json_t *next = NULL;
	char rk[BACKEND_REF_TEXT_MAX];
	json_t *fields;
	int r;

	r = ref_key(ref, rk);
	if (r < 0)
		return r;
	fields = json_object_get(s->values, rk);
	if (!fields || (field && !json_object_get(fields, field)))
		return 0;
	next = json_deep_copy(s->values);
	if (!next)
		return -ENOMEM;
	fields = json_object_get(next, rk);
	if (field)
		(void)json_object_del(fields, field);
	if (!field || json_object_size(fields) == 0)
		(void)json_object_del(next, rk);
	r = values_write(s, next);
	if (r < 0)
		return field_error_set(err, r, field ? field : "", NULL,
				       "cannot remove the secret(s) of %s: %s", rk, strerror(-r));
	json_decref(s->values);
	s->values = TAKE_PTR(next);
	return 1;
}

int backend_secrets_clear(struct backend_secrets *s, const struct backend_ref *ref,
			  const char *field, struct field_error *err)
{
	int r = check_field(field, err);

	return r < 0 ? r : remove_values(s, ref, field, err);
}

int backend_secrets_purge(struct backend_secrets *s, const struct backend_ref *ref,
			  struct field_error *err)
{
	return remove_values(s, ref, NULL, err);
}

bool backend_secrets_configured(struct backend_secrets *s, const struct backend_ref *ref,
				const char *field)
{
	char rk[BACKEND_REF_TEXT_MAX];

	if (!s || !field || ref_key(ref, rk) < 0)
		return false;
	return json_object_get(json_object_get(s->values, rk), field) != NULL;
}

int backend_secrets_resolve(struct backend_secrets *s, const struct backend_ref *ref,
			    const char *field, char **ret, struct field_error *err)
{
	_cleanup_secret_ char *plain = NULL;
	_cleanup_free_ void *raw = NULL;
	unsigned char vkey[KEY_BYTES];
	char rk[BACKEND_REF_TEXT_MAX];
	const unsigned char *sealed;
	json_t *v;
	size_t n = 0, len;
	int r;

	r = ref_key(ref, rk);
	if (r < 0)
		return r;
	r = check_field(field, err);
	if (r < 0)
		return r;
	v = json_object_get(json_object_get(s->values, rk), field);
	if (!v)
		return field_error_set(err, -ENOENT, field, NULL, "no secret configured for %s",
				       rk);
	r = key_get(s, false, err);
	if (r < 0)
		return r;
	if (base64_decode(json_string_value(v), json_string_length(v), &raw, &n) < 0 ||
	    n < SEALED_MIN || n > SEALED_MAX)
		return field_error_set(err, -EBADMSG, field, NULL,
				       "the stored secret of %s is malformed", rk);
	sealed = raw;
	len = n - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES;
	plain = backend_secret_alloc(len);
	if (!plain)
		return -ENOMEM;
	r = value_key(s, rk, field, vkey);
	if (r >= 0 &&
	    crypto_secretbox_open_easy((unsigned char *)plain, sealed + crypto_secretbox_NONCEBYTES,
				       n - crypto_secretbox_NONCEBYTES, sealed, vkey) != 0)
		r = -EBADMSG;
	sodium_memzero(vkey, sizeof(vkey));
	if (r < 0 || memchr(plain, '\0', len))
		return field_error_set(
			err, -EBADMSG, field, NULL,
			"the secret of %s cannot be decrypted (wrong key or tampered file)", rk);
	*ret = TAKE_PTR(plain);
	return 0;
}

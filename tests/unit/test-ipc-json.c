/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ipc/ipc-json.c: strict parse (duplicates, non-objects, garbage, NULs), the allow-list of keys,
 * each typed getter (present / absent / null / required / wrong type / out of range), JSON paths
 * in errors ("plan.mounts[3].target"), string vectors and their limits, and error paths that stay
 * valid UTF-8 when truncated.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "ipc/ipc-json.h"
#include "tests/tap.h"

static const char doc[] =
	"{\"plan\":{\"argv\":[\"/bin/sh\",\"-c\",\"echo hi\"],"
	"\"envp\":[\"A=1\",\"B=2\",\"LONG=xy\"],\"mixed\":[\"a\",1],\"cwd\":\"/work\","
	"\"n\":5,\"neg\":-3,\"f\":1.5,\"b\":true,\"o\":{},\"a\":[1,2],\"nul\":null,"
	"\"big\":9223372036854775807,\"mounts\":[{},{},{},{\"type\":\"bind\",\"target\":5}]}}";

static int parse(const char *s, json_t **ret, struct field_error *e)
{
	return ipc_json_parse_object(s, strlen(s), ret, e);
}

static void test_parse(void)
{
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
		const char *what;
	} bad[] = {
		{ "{\"a\":1,\"a\":2}", 0, "duplicate keys" },
		{ "{\"a\":{\"b\":1,\"b\":1}}", 0, "duplicate keys in a nested object" },
		{ "[1,2]", 0, "an array" },
		{ "\"str\"", 0, "a string" },
		{ "42", 0, "a number" },
		{ "garbage", 0, "garbage" },
		{ "", 0, "nothing" },
		{ "{\"a\":1", 0, "an unterminated object" },
		{ "{}{}", 0, "two objects" },
		{ "{\"a\":\"x\\u0000y\"}", 0, "an escaped NUL in a string" },
		{ "{\"a\\u0000\":1}", 0, "an escaped NUL in a key" },
		{ "{\"a\":\"x\0y\"}", 11, "a raw NUL in a string" },
		{ "{}\0", 3, "a raw NUL after the object" },
		{ "{\"a\":\"\xff\"}", 0, "invalid UTF-8" },
	};
	struct field_error e;
	json_t *j = NULL;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		int r;

		memset(&e, 0, sizeof(e));
		j = NULL;
		r = ipc_json_parse_object(bad[i].text,
					  bad[i].len ? bad[i].len : strlen(bad[i].text), &j, &e);
		ok(r == -EBADMSG && !j && e.reason[0] != '\0', "refused: %s (%d: %s)", bad[i].what,
		   r, e.reason);
		json_decref(j);
	}

	memset(&e, 0, sizeof(e));
	(void)parse("{\"a\":1,\"a\":2}", &j, &e);
	ok(strstr(e.reason, "duplicate") != NULL, "the reason names the duplicate (%s)", e.reason);
	(void)parse("[1]", &j, &e);
	is_str("expected a JSON object", e.reason, "the reason for a non-object");
	is_str("", e.field, "an error about the document names no field");
	is_int(-EBADMSG, parse("[1]", &j, NULL), "a NULL error pointer is fine");

	j = NULL;
	is_int(0, ipc_json_parse_object("{\"k\":1}trailing", 7, &j, &e),
	       "only len bytes are parsed");
	ok(json_is_object(j) && json_integer_value(json_object_get(j, "k")) == 1,
	   "and the object is right");
	json_decref(j);
}

static void test_check_keys(json_t *obj)
{
	/* "some" lacks "mounts". */
	static const char *const all[] = {
		"argv", "envp", "mixed", "cwd", "n",   "neg",	 "f",
		"b",	"o",	"a",	 "nul", "big", "mounts", NULL,
	};
	static const char *const some[] = {
		"argv", "envp", "mixed", "cwd", "n", "neg", "f", "b", "o", "a", "nul", "big", NULL,
	};
	struct field_error e = { 0 };

	is_int(0, ipc_json_check_keys(obj, all, "plan", &e), "every key allowed: fine");
	is_int(-EINVAL, ipc_json_check_keys(obj, some, "plan", &e), "an unknown key is -EINVAL");
	is_str("plan.mounts", e.field, "the error names the unknown key with its path");
	is_str("unknown field", e.reason, "and says why");
	is_int(-EINVAL, ipc_json_check_keys(obj, some, "", &e), "at the top level");
	is_str("mounts", e.field, "the path is just the key");
}

static void test_getters(json_t *obj)
{
	struct field_error e = { 0 };
	const char *s = "untouched";
	bool b = false;
	uint64_t u = 77;
	int64_t i = 77;
	json_t *v = NULL;

	/* Strings. */
	is_int(1, ipc_json_get_string(obj, "cwd", true, "plan", &s, &e), "string: present");
	is_str("/work", s, "string: value");
	s = "untouched";
	is_int(0, ipc_json_get_string(obj, "missing", false, "plan", &s, &e),
	       "string: absent, optional");
	is_str("untouched", s, "string: nothing stored when absent");
	is_int(0, ipc_json_get_string(obj, "nul", false, "plan", &s, &e),
	       "string: null counts as absent");
	is_int(-EINVAL, ipc_json_get_string(obj, "missing", true, "plan", &s, &e),
	       "string: absent but required");
	ok(streq(e.field, "plan.missing") && streq(e.reason, "required field is missing"),
	   "string: the error names plan.missing (%s: %s)", e.field, e.reason);
	is_int(-EINVAL, ipc_json_get_string(obj, "nul", true, "plan", &s, &e),
	       "string: null but required");
	is_int(-EINVAL, ipc_json_get_string(obj, "n", true, "plan", &s, &e), "string: wrong type");
	ok(streq(e.field, "plan.n") && streq(e.reason, "expected a string"),
	   "string: the error names plan.n (%s: %s)", e.field, e.reason);

	/* Booleans. */
	ok(ipc_json_get_bool(obj, "b", true, "plan", &b, &e) == 1 && b, "bool: present and true");
	is_int(0, ipc_json_get_bool(obj, "missing", false, "plan", &b, &e),
	       "bool: absent, optional");
	is_int(-EINVAL, ipc_json_get_bool(obj, "n", false, "plan", &b, &e),
	       "bool: an integer is not a boolean");
	is_str("expected true or false", e.reason, "bool: reason");

	/* Unsigned integers. */
	ok(ipc_json_get_uint64(obj, "n", true, 1, 10, "plan", &u, &e) == 1 && u == 5,
	   "uint64: present, in range");
	ok(ipc_json_get_uint64(obj, "n", true, 5, 5, "plan", &u, &e) == 1 && u == 5,
	   "uint64: bounds are inclusive");
	u = 77;
	is_int(-ERANGE, ipc_json_get_uint64(obj, "n", true, 6, 10, "plan", &u, &e),
	       "uint64: below min");
	ok(streq(e.field, "plan.n") && u == 77, "uint64: names plan.n, stores nothing");
	is_int(-ERANGE, ipc_json_get_uint64(obj, "n", true, 0, 4, "plan", &u, &e),
	       "uint64: above max");
	is_int(-ERANGE, ipc_json_get_uint64(obj, "neg", true, 0, UINT64_MAX, "plan", &u, &e),
	       "uint64: a negative number is out of range");
	ok(ipc_json_get_uint64(obj, "big", true, 0, UINT64_MAX, "plan", &u, &e) == 1 &&
		   u == (uint64_t)INT64_MAX,
	   "uint64: INT64_MAX");
	is_int(-EINVAL, ipc_json_get_uint64(obj, "f", true, 0, 10, "plan", &u, &e),
	       "uint64: a real is not an integer");
	is_int(-EINVAL, ipc_json_get_uint64(obj, "cwd", true, 0, 10, "plan", &u, &e),
	       "uint64: a string is not an integer");
	is_int(0, ipc_json_get_uint64(obj, "missing", false, 0, 10, "plan", &u, &e),
	       "uint64: absent, optional");

	/* Signed integers. */
	ok(ipc_json_get_int64(obj, "neg", true, -5, 5, "plan", &i, &e) == 1 && i == -3,
	   "int64: a negative value in range");
	ok(ipc_json_get_int64(obj, "neg", true, -3, -3, "plan", &i, &e) == 1,
	   "int64: bounds are inclusive");
	is_int(-ERANGE, ipc_json_get_int64(obj, "neg", true, -2, 5, "plan", &i, &e),
	       "int64: below min");
	is_int(-ERANGE, ipc_json_get_int64(obj, "n", true, -2, 4, "plan", &i, &e),
	       "int64: above max");
	is_int(-EINVAL, ipc_json_get_int64(obj, "b", true, 0, 1, "plan", &i, &e),
	       "int64: a boolean is not an integer");
	is_int(-EINVAL, ipc_json_get_int64(obj, "missing", true, 0, 1, "plan", &i, &e),
	       "int64: absent but required");

	/* Objects and arrays. */
	ok(ipc_json_get_object(obj, "o", true, "plan", &v, &e) == 1 && json_is_object(v),
	   "object: present");
	is_int(-EINVAL, ipc_json_get_object(obj, "a", true, "plan", &v, &e),
	       "object: an array is not one");
	is_str("expected an object", e.reason, "object: reason");
	ok(ipc_json_get_array(obj, "a", true, 2, "plan", &v, &e) == 1 && json_array_size(v) == 2,
	   "array: present, at the item limit");
	is_int(-E2BIG, ipc_json_get_array(obj, "a", true, 1, "plan", &v, &e),
	       "array: over the limit");
	is_str("plan.a", e.field, "array: the error names it");
	is_int(-EINVAL, ipc_json_get_array(obj, "o", true, 5, "plan", &v, &e),
	       "array: an object is not one");
	is_int(0, ipc_json_get_array(obj, "missing", false, 5, "plan", &v, &e),
	       "array: absent, optional");
}

static void test_paths(json_t *obj)
{
	struct field_error e = { 0 };
	json_t *mounts = json_object_get(obj, "mounts"), *m3 = json_array_get(mounts, 3);
	const char *s = NULL;
	char path[256];

	json_path_index(path, sizeof(path), "plan.mounts", 3);
	is_str("plan.mounts[3]", path, "json_path_index");
	is_int(-EINVAL, ipc_json_get_string(m3, "target", true, path, &s, &e),
	       "a nested wrong type");
	is_str("plan.mounts[3].target", e.field, "the error path is plan.mounts[3].target");
	json_path_join(path, sizeof(path), NULL, "plan");
	is_str("plan", path, "json_path_join with no path is the key");
	json_path_join(path, sizeof(path), "plan", "cwd");
	is_str("plan.cwd", path, "json_path_join");

	is_int(-EINVAL, field_error_set(&e, EINVAL, "a.b", NULL, "why %d", 7),
	       "field_error_set returns a negative code even when given a positive one");
	ok(streq(e.field, "a.b") && streq(e.reason, "why 7"), "and records path and reason");
	is_int(-E2BIG, field_error_set(NULL, -E2BIG, "", "k", "x"), "a NULL error pointer is fine");
}

/* A key of count copies of the UTF-8 character ch, as a one-key document. */
static json_t *doc_with_long_key(const char *ch, size_t count)
{
	_cleanup_free_ char *key = malloc(strlen(ch) * count + 1);
	json_t *o;

	if (!key)
		bail("out of memory");
	key[0] = '\0';
	for (size_t i = 0; i < count; i++)
		strcat(key, ch);
	o = json_object();
	if (!o || json_object_set_new(o, key, json_true()) < 0)
		bail("cannot build the document");
	return o;
}

static void test_utf8_truncation(void)
{
	static const char *const none[] = { NULL };
	static const char *const chars[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80" };

	for (size_t i = 0; i < ELEMENTSOF(chars); i++) {
		_cleanup_json_ json_t *o = doc_with_long_key(chars[i], 200);
		_cleanup_json_ json_t *as_json = NULL;
		struct field_error e = { 0 };

		(void)ipc_json_check_keys(o, none, "x", &e);
		as_json = json_string(e.field);
		ok(as_json && strlen(e.field) > 240,
		   "a %zu-byte character cut at 256 bytes stays valid UTF-8 (%zu bytes kept)",
		   strlen(chars[i]), strlen(e.field));
	}
}

static void test_strv(json_t *obj)
{
	struct field_error e = { 0 };
	char **l = NULL;

	ok(ipc_json_get_strv(obj, "argv", true, 3, 7, "plan", &l, &e) == 1 && strv_length(l) == 3 &&
		   streq(l[0], "/bin/sh") && streq(l[2], "echo hi") && !l[3],
	   "strv: a NULL-terminated copy, at both limits");
	strv_free(l);
	l = NULL;
	is_int(-E2BIG, ipc_json_get_strv(obj, "argv", true, 2, 100, "plan", &l, &e),
	       "strv: more items than allowed");
	is_str("plan.argv", e.field, "strv: the error names the array");
	is_int(-E2BIG, ipc_json_get_strv(obj, "envp", true, 10, 3, "plan", &l, &e),
	       "strv: a string over max_len");
	is_str("plan.envp[2]", e.field, "strv: the error names the item");
	is_int(-EINVAL, ipc_json_get_strv(obj, "mixed", true, 10, 10, "plan", &l, &e),
	       "strv: a non-string item");
	ok(streq(e.field, "plan.mixed[1]") && streq(e.reason, "expected a string"),
	   "strv: the error names plan.mixed[1] (%s: %s)", e.field, e.reason);
	ok(!l, "strv: nothing stored on error");
	is_int(0, ipc_json_get_strv(obj, "missing", false, 10, 10, "plan", &l, &e),
	       "strv: absent, optional");
	is_int(-EINVAL, ipc_json_get_strv(obj, "o", false, 10, 10, "plan", &l, &e),
	       "strv: an object");
}

int main(void)
{
	_cleanup_json_ json_t *root = NULL;
	struct field_error e;
	json_t *obj;

	plan(85);
	test_parse();
	if (parse(doc, &root, &e) < 0)
		bail("cannot parse the test document: %s", e.reason);
	obj = json_object_get(root, "plan");
	test_check_keys(obj);
	test_getters(obj);
	test_paths(obj);
	test_utf8_truncation();
	test_strv(obj);
	return tap_exit_status();
}

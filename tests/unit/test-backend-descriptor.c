/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backend descriptors and references: every valid fixture parses and round-trips through
 * backend_descriptor_to_json(); every invalid fixture is refused with the field path and reason
 * its .expect sidecar names (line 1: field, line 2: reason); the text rule at its edges; the
 * built-in-only isolation "none"; references in text and JSON form, valid and not.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-descriptor.h"
#include "tests/tap.h"

static int parse_file(const char *path, unsigned flags, struct backend_descriptor **ret,
		      struct field_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (read_full_file(path, 1024 * 1024, &buf, &len) < 0)
		bail("cannot read %s", path);
	return backend_descriptor_parse(buf, len, flags, ret, err);
}

static void test_invalid(void)
{
	_cleanup_free_ char *dir =
		strdup_printf("%s/tests/fixtures/descriptors/invalid", tap_srcdir());
	_cleanup_strv_free_ char **names = tap_list_files(dir, ".json");

	ok(strv_length(names) >= 80, "at least 80 invalid descriptor fixtures (%zu)",
	   strv_length(names));
	for (char **n = names; *n; n++) {
		_cleanup_free_ char *path = strdup_printf("%s/%s", dir, *n), *expect = NULL;
		_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
		struct field_error err = { "", "" };
		const char *field, *reason;
		int r;

		expect = tap_read_expect(path, &field, &reason);

		r = parse_file(path, 0, &d, &err);
		ok(r < 0 && !d, "%s is refused (%d)", *n, r);
		is_str(field, err.field, "%s: field", *n);
		is_str(reason, err.reason, "%s: reason", *n);
	}
}

static void test_valid(void)
{
	_cleanup_free_ char *dir =
		strdup_printf("%s/tests/fixtures/descriptors/valid", tap_srcdir());
	_cleanup_strv_free_ char **names = tap_list_files(dir, ".json");

	ok(strv_length(names) >= 5, "valid descriptor fixtures present (%zu)", strv_length(names));
	for (char **n = names; *n; n++) {
		_cleanup_free_ char *path = strdup_printf("%s/%s", dir, *n);
		_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL, *e = NULL;
		_cleanup_json_ json_t *j1 = NULL, *j2 = NULL;
		struct field_error err = { "", "" };
		int r = parse_file(path, 0, &d, &err);

		if (!ok(r == 0 && d, "%s parses", *n))
			diag("%s: %s", err.field, err.reason);
		if (r < 0)
			continue;
		ok(backend_descriptor_to_json(d, &j1) == 0 &&
			   backend_descriptor_from_json(j1, 0, "", &e, &err) == 0 &&
			   backend_descriptor_to_json(e, &j2) == 0 && json_equal(j1, j2),
		   "%s round-trips through backend_descriptor_to_json", *n);
	}
}

static void test_docker_contents(void)
{
	_cleanup_free_ char *path =
		strdup_printf("%s/tests/fixtures/descriptors/valid/docker.json", tap_srcdir());
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *j = NULL;
	struct field_error err = { "", "" };
	const struct backend_field *f;

	if (parse_file(path, 0, &d, &err) < 0)
		bail("docker.json: %s: %s", err.field, err.reason);
	is_str("docker", d->kind, "kind");
	is_str("Docker", d->name, "name");
	is_int(6, (long long)d->n_fields, "six fields");
	f = backend_descriptor_field(d, "image");
	ok(f && f->type == BACKEND_FIELD_STRING && f->required &&
		   streq(json_string_value(f->default_value), "debian:12") && f->description,
	   "image: required string, default debian:12, with a description");
	f = backend_descriptor_field(d, "pull");
	ok(f && f->type == BACKEND_FIELD_SELECT && f->n_options == 3 && !f->required,
	   "pull: select with three options, not required");
	ok(f && streq(f->options[0].value, "missing") && streq(f->options[0].label, "missing") &&
		   streq(f->options[2].value, "never") &&
		   streq(f->options[2].label, "Never (offline)"),
	   "a bare string option is its own label; an object option keeps its label");
	f = backend_descriptor_field(d, "cpus");
	ok(f && f->type == BACKEND_FIELD_NUMBER && json_is_real(f->default_value) &&
		   json_real_value(f->default_value) == 1.5,
	   "cpus: number, default 1.5");
	f = backend_descriptor_field(d, "readOnlyRoot");
	ok(f && f->type == BACKEND_FIELD_BOOLEAN && json_is_true(f->default_value),
	   "readOnlyRoot: boolean, default true");
	f = backend_descriptor_field(d, "registry.password");
	ok(f && f->type == BACKEND_FIELD_SECRET && !f->default_value && !f->description,
	   "registry.password: secret without default or description");
	ok(!backend_descriptor_field(d, "nope"), "an unknown id is not found");
	is_int(BACKEND_PLATFORM_LINUX, d->claims.platforms, "claims.platforms");
	is_int(BACKEND_ENFORCES_FILESYSTEM | BACKEND_ENFORCES_NETWORK | BACKEND_ENFORCES_LIMITS |
		       BACKEND_ENFORCES_ENV,
	       d->claims.enforces, "claims.enforces");
	is_int(BACKEND_NETWORK_NONE | BACKEND_NETWORK_PROXY, d->claims.network_modes,
	       "claims.networkModes");
	is_int(BACKEND_ISOLATION_CONTAINER, d->claims.isolation, "claims.isolation");
	ok(d->claims.read_only_workspace, "claims.readOnlyWorkspace");

	if (backend_descriptor_to_json(d, &j) < 0)
		bail("to_json");
	is_str("Never (offline)",
	       json_string_value(json_object_get(
		       json_array_get(json_object_get(
					      json_array_get(json_object_get(
								     json_object_get(j, "settings"),
								     "fields"),
							     2),
					      "options"),
				      2),
		       "label")),
	       "the normalized document spells every option as {value, label}");
	ok(json_is_false(json_object_get(
		   json_array_get(json_object_get(json_object_get(j, "settings"), "fields"), 1),
		   "required")),
	   "and makes required explicit");
}

static void test_builtin_flag(void)
{
	static const char host[] =
		"{\"kind\":\"host\",\"name\":\"Host\",\"description\":\"Unconfined.\","
		"\"claims\":{\"platforms\":[\"linux\"],\"enforces\":[],\"isolation\":\"none\"}}";
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL, *e = NULL;
	struct field_error err = { "", "" };

	is_int(0,
	       backend_descriptor_parse(host, strlen(host), BACKEND_DESCRIPTOR_BUILTIN, &d, &err),
	       "a built-in may claim isolation \"none\"");
	ok(d && d->claims.isolation == BACKEND_ISOLATION_NONE, "and gets it");
	is_int(-EINVAL, backend_descriptor_parse(host, strlen(host), 0, &e, &err),
	       "a pack may not");
	is_str("claims.isolation", err.field, "the field is named");
}

static void test_path_prefix_and_size(void)
{
	static const char doc[] = "{\"kind\":\"k\",\"name\":\"K\",\"description\":\"\","
				  "\"settings\":{\"fields\":[{\"id\":\"a\",\"type\":\"string\","
				  "\"label\":\"<i>\"}]},\"claims\":{\"platforms\":[\"linux\"],"
				  "\"enforces\":[],\"isolation\":\"vm\"}}";
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *j = json_loads(doc, 0, NULL);
	_cleanup_free_ char *big = NULL;
	struct field_error err = { "", "" };

	if (!j)
		bail("bad inline document");
	ok(backend_descriptor_from_json(j, 0, "backends[2]", &d, &err) < 0 && !d,
	   "a descriptor inside a manifest is refused");
	is_str("backends[2].settings.fields[0].label", err.field,
	       "with the manifest's path in front");

	big = malloc(BACKEND_DESCRIPTOR_MAX_BYTES + 2);
	if (!big)
		bail("out of memory");
	memset(big, ' ', BACKEND_DESCRIPTOR_MAX_BYTES + 1);
	big[BACKEND_DESCRIPTOR_MAX_BYTES + 1] = '\0';
	is_int(-EFBIG, backend_descriptor_parse(big, BACKEND_DESCRIPTOR_MAX_BYTES + 1, 0, &d, &err),
	       "a document over the size limit is refused before parsing");
	ok(!d, "and yields nothing");
}

#define SAFE(s) backend_text_is_safe((s), strlen(s))

static void test_text_rule(void)
{
	char s[BACKEND_TEXT_MAX + 2];

	ok(SAFE("Plain text, with \"quotes\" & 5 ≥ 3"),
	   "plain text with quotes, ampersand and non-ASCII is safe");
	ok(SAFE("button=1, Turn on = off, on="),
	   "\"on\" inside a word, before a space or alone is not an event handler");
	ok(!SAFE("online=true"), "but \"online=\" at a word start is refused (documented)");
	ok(!SAFE("a\xff"), "invalid UTF-8 is refused");
	ok(!SAFE("a\tb"), "a tab is a control character");
	ok(!SAFE("a\xe2\x80\xa8"
		 "b"),
	   "U+2028 LINE SEPARATOR is refused");
	ok(!SAFE("\xe2\x80\x8f"), "U+200F RIGHT-TO-LEFT MARK is refused");
	ok(!SAFE("VBScript:x"), "script URLs in any case are refused");
	memset(s, 'x', sizeof(s));
	ok(backend_text_is_safe(s, BACKEND_TEXT_MAX), "exactly 1024 bytes is fine");
	ok(!backend_text_is_safe(s, BACKEND_TEXT_MAX + 1), "1025 bytes is not");
	ok(!backend_text_is_safe(NULL, 0), "NULL is not text");

	ok(backend_field_id_is_valid("a.b-c_D9"), "field id with . - _ and digits");
	memset(s, 'a', 64);
	s[64] = '\0';
	ok(backend_field_id_is_valid(s), "a 64-byte field id is fine");
	s[64] = 'a';
	s[65] = '\0';
	ok(!backend_field_id_is_valid(s), "a 65-byte one is not");
	ok(!backend_field_id_is_valid("_a") && !backend_field_id_is_valid("a/b"),
	   "ids start with a letter and have no '/'");
}

static void test_ref_text(void)
{
	static const char *const good[] = {
		"builtin:auto",
		"builtin:host",
		"builtin:vm",
		"pack:org.example.cloud:cloud",
		"pack:1password.cli:op-2",
		"pack:a:b",
		NULL,
	};
	static const char *const bad[] = {
		"",
		"builtin",
		"builtin:",
		"builtin:Auto",
		"builtin:auto ",
		"builtin:a_b",
		"builtin:-a",
		"builtin:1a",
		"builtin:a:b",
		"pack:",
		"pack:org.example:",
		"pack::cloud",
		"pack:org..example:cloud",
		"pack:org.example.:cloud",
		"pack:.org:cloud",
		"pack:-org:cloud",
		"pack:Org.example:cloud",
		"pack:org_example:cloud",
		"pack:org.example:cloud:extra",
		"pack:org.example",
		"docker",
		"Builtin:auto",
		"builtin:auto\n",
		NULL,
	};
	char buf[BACKEND_REF_TEXT_MAX], longer[300];
	struct backend_ref ref, a, h;

	for (const char *const *g = good; *g; g++) {
		int r = backend_ref_parse(*g, &ref);

		ok(r == 0 && backend_ref_format(&ref, buf, sizeof(buf)) == 0 && streq(buf, *g),
		   "\"%s\" parses and formats back", *g);
	}
	for (const char *const *b = bad; *b; b++)
		is_int(-EINVAL, backend_ref_parse(*b, &ref), "\"%s\" is refused", *b);
	is_int(-EINVAL, backend_ref_parse(NULL, &ref), "NULL is refused");

	if (backend_ref_parse("pack:org.example.cloud:cloud", &ref) < 0)
		bail("parse");
	ok(ref.source == BACKEND_SOURCE_PACK && streq(ref.pack_id, "org.example.cloud") &&
		   streq(ref.kind, "cloud"),
	   "the parts of a pack reference");
	is_int(-ENOBUFS, backend_ref_format(&ref, buf, 10), "a short buffer is -ENOBUFS");

	/* Length limits: pack id 128, kind 64. */
	memset(longer, 0, sizeof(longer));
	memcpy(longer, "pack:", 5);
	memset(longer + 5, 'p', 128);
	memcpy(longer + 133, ":", 1);
	memset(longer + 134, 'k', 64);
	ok(backend_ref_parse(longer, &ref) == 0 &&
		   backend_ref_format(&ref, buf, sizeof(buf)) == 0 && streq(buf, longer),
	   "the longest reference fits BACKEND_REF_TEXT_MAX");
	longer[134 + 64] = 'k';
	is_int(-EINVAL, backend_ref_parse(longer, &ref), "a 65-byte kind is refused");
	longer[134 + 64] = '\0';
	memmove(longer + 6, longer + 5, strlen(longer + 5) + 1);
	is_int(-EINVAL, backend_ref_parse(longer, &ref), "a 129-byte pack id is refused");

	backend_ref_auto(&a);
	ok(backend_ref_format(&a, buf, sizeof(buf)) == 0 && streq(buf, "builtin:auto"),
	   "backend_ref_auto() is builtin:auto");
	ok(!backend_ref_is_unconfined(&a), "builtin:auto is not unconfined");
	if (backend_ref_parse("builtin:host", &h) < 0)
		bail("parse");
	ok(backend_ref_is_unconfined(&h), "builtin:host is unconfined");
	if (backend_ref_parse("pack:org.example:host", &ref) < 0)
		bail("parse");
	ok(!backend_ref_is_unconfined(&ref), "a pack's kind \"host\" is not the built-in");
	ok(!backend_ref_equal(&a, &h) && backend_ref_equal(&h, &h), "backend_ref_equal");
	is_int(-EINVAL, backend_ref_init(&ref, BACKEND_SOURCE_BUILTIN, "org.x", "auto"),
	       "a built-in with a pack id is refused");
	is_int(-EINVAL, backend_ref_init(&ref, BACKEND_SOURCE_PACK, NULL, "x"),
	       "a pack without a pack id is refused");
}

static void test_ref_json(void)
{
	static const struct {
		const char *json, *field, *reason;
	} bad[] = {
		{ "42", "backend", "expected a backend reference (an object or a string)" },
		{ "\"pack:x\"", "backend",
		  "not a backend reference (builtin:<kind> or pack:<packId>:<kind>)" },
		{ "{\"source\":\"builtin\",\"kind\":\"auto\",\"packId\":\"org.x\"}",
		  "backend.packId", "only pack backends have a packId" },
		{ "{\"source\":\"pack\",\"kind\":\"cloud\"}", "backend.packId",
		  "required field is missing" },
		{ "{\"source\":\"pack\",\"kind\":\"cloud\",\"packId\":\"Org\"}", "backend.packId",
		  "must be reverse-DNS-like: [a-z0-9][a-z0-9.-]*, no empty label, at most 128 bytes" },
		{ "{\"source\":\"cloud\",\"kind\":\"x\"}", "backend.source",
		  "expected \"builtin\" or \"pack\"" },
		{ "{\"source\":\"builtin\",\"kind\":\"Auto\"}", "backend.kind",
		  "must match [a-z][a-z0-9-]* (at most 64 bytes)" },
		{ "{\"source\":\"builtin\"}", "backend.kind", "required field is missing" },
		{ "{\"source\":\"builtin\",\"kind\":\"auto\",\"url\":\"x\"}", "backend.url",
		  "unknown field" },
	};
	static const char *const good[] = {
		"{\"source\":\"builtin\",\"kind\":\"auto\"}",
		"{\"source\":\"pack\",\"packId\":\"org.example.cloud\",\"kind\":\"cloud\"}",
	};

	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		_cleanup_json_ json_t *j = json_loads(good[i], 0, NULL), *back = NULL;
		struct field_error err = { "", "" };
		struct backend_ref ref, again;

		ok(backend_ref_from_json(j, "backend", &ref, &err) == 0 &&
			   backend_ref_to_json(&ref, &back) == 0 && json_equal(j, back),
		   "%s round-trips", good[i]);
		ok(backend_ref_from_json(back, "backend", &again, &err) == 0 &&
			   backend_ref_equal(&ref, &again),
		   "and reads back equal");
	}
	{
		_cleanup_json_ json_t *j = json_string("pack:org.example.cloud:cloud");
		struct field_error err = { "", "" };
		struct backend_ref ref;

		ok(backend_ref_from_json(j, "backend", &ref, &err) == 0 &&
			   streq(ref.pack_id, "org.example.cloud"),
		   "the text form is accepted where JSON is expected");
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		_cleanup_json_ json_t *j = json_loads(bad[i].json, JSON_DECODE_ANY, NULL);
		struct field_error err = { "", "" };
		struct backend_ref ref;

		if (!j)
			bail("bad inline JSON %s", bad[i].json);
		ok(backend_ref_from_json(j, "backend", &ref, &err) == -EINVAL, "%s is refused",
		   bad[i].json);
		is_str(bad[i].field, err.field, "field of %s", bad[i].json);
		is_str(bad[i].reason, err.reason, "reason of %s", bad[i].json);
	}
}

int main(void)
{
	plan_lazy();
	test_valid();
	test_docker_contents();
	test_invalid();
	test_builtin_flag();
	test_path_prefix_and_size();
	test_text_rule();
	test_ref_text();
	test_ref_json();
	return tap_exit_status();
}

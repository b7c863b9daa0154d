/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pack manifests: the test pack's manifest parses; each invalid variant (a field removed,
 * replaced or added) is refused with the JSON path of the field; descriptors with anything but
 * data are refused at their path inside the manifest; relative executable paths.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/pack/pack-manifest.h"
#include "tests/tap.h"

static json_t *load_test_pack(void)
{
	_cleanup_free_ char *path =
		strdup_printf("%s/tests/packs/test-pack/pack.json", tap_srcdir());
	_cleanup_free_ char *buf = NULL;
	struct field_error fe = { 0 };
	json_t *j = NULL;
	size_t len = 0;

	if (!path || read_full_file(path, 1024 * 1024, &buf, &len) < 0 ||
	    ipc_json_parse_object(buf, len, &j, &fe) < 0)
		bail("cannot read the test pack's manifest");
	return j;
}

/* Apply "path=json" (json "DELETE" removes) to a copy of the manifest and parse it. */
static int parse_with(json_t *base, const char *path, const char *value, struct field_error *fe)
{
	_cleanup_json_ json_t *m = json_deep_copy(base);
	_cleanup_(pack_manifest_freep) struct pack_manifest *pm = NULL;
	_cleanup_free_ char *p = strdup(path);
	json_t *obj = m;
	char *key = p, *dot;

	/* Walk "a.b.0.c": numbers index arrays. */
	while ((dot = strchr(key, '.'))) {
		*dot = '\0';
		obj = json_is_array(obj) ? json_array_get(obj, strtoul(key, NULL, 10))
					 : json_object_get(obj, key);
		key = dot + 1;
	}
	if (streq(value, "DELETE"))
		(void)json_object_del(obj, key);
	else {
		json_error_t je;
		json_t *v = json_loads(value, JSON_DECODE_ANY, &je);

		if (!v)
			bail("bad test value %s", value);
		if (json_is_array(obj) && strtoul(key, NULL, 10) >= json_array_size(obj))
			(void)json_array_append_new(obj, v);
		else if (json_is_array(obj))
			(void)json_array_set_new(obj, strtoul(key, NULL, 10), v);
		else
			(void)json_object_set_new(obj, key, v);
	}
	return pack_manifest_from_json(m, &pm, fe);
}

static const struct {
	const char *path, *value, *field;
} bad[] = {
	{ "id", "DELETE", "id" },
	{ "id", "\"Org.Example\"", "id" },
	{ "id", "\"org..example\"", "id" },
	{ "id", "42", "id" },
	{ "version", "DELETE", "version" },
	{ "version", "\"1 0\"", "version" },
	{ "version", "\"\"", "version" },
	{ "description", "\"<b>bold</b>\"", "description" },
	{ "description", "\"see javascript:alert(1)\"", "description" },
	{ "executable", "DELETE", "executable" },
	{ "executable", "\"/bin/sh\"", "executable" },
	{ "executable", "\"../escape\"", "executable" },
	{ "executable", "\"bin/../x\"", "executable" },
	{ "executable", "\".hidden\"", "executable" },
	{ "executable", "\"bin//x\"", "executable" },
	{ "executable", "\"bin/x/\"", "executable" },
	{ "network", "\"proxy\"", "domains" },
	{ "network", "\"wide\"", "network" },
	{ "domains", "[\"api.example.com\"]", "domains" },
	{ "hostSockets", "[{\"name\": \"engine\"}]", "hostSockets[0].path" },
	{ "hostSockets", "[{\"name\": \"Engine\", \"path\": \"/run/e.sock\"}]",
	  "hostSockets[0].name" },
	{ "hostSockets", "[{\"name\": \"engine\", \"path\": \"run/e.sock\"}]",
	  "hostSockets[0].path" },
	{ "hostSockets", "[{\"name\": \"engine\", \"path\": \"/run/../e.sock\"}]",
	  "hostSockets[0].path" },
	{ "hostSockets", "[{\"name\": \"engine\", \"path\": \"/run/e.sock\", \"mode\": 1}]",
	  "hostSockets[0].mode" },
	{ "hostSockets",
	  "[{\"name\": \"e\", \"path\": \"/a\"}, {\"name\": \"e\", \"path\": \"/b\"}]",
	  "hostSockets[1].name" },
	{ "env", "[\"docker_host\"]", "env[0]" },
	{ "env", "[\"LD_PRELOAD\"]", "env[0]" },
	{ "env", "[\"PATH\"]", "env[0]" },
	{ "env", "[\"1X\"]", "env[0]" },
	{ "env", "[\"DOCKER_HOST\", \"DOCKER_HOST\"]", "env[1]" },
	{ "env", "\"DOCKER_HOST\"", "env" },
	{ "network", "true", "network" },
	{ "homepage", "\"https://example.org\"", "homepage" },
	{ "backends", "[]", "backends" },
	{ "backends", "DELETE", "backends" },
	{ "backends.0.kind", "\"Test\"", "backends[0].kind" },
	{ "backends.0.kind", "\"other\"", "backends[0].descriptor.kind" },
	{ "backends.0.extra", "1", "backends[0].extra" },
	{ "backends.0.descriptor", "DELETE", "backends[0].descriptor" },
	{ "backends.0.descriptor.name", "\"<script>x</script>\"", "backends[0].descriptor.name" },
	{ "backends.0.descriptor.description", "\"click onclick=steal()\"",
	  "backends[0].descriptor.description" },
	{ "backends.0.descriptor.render", "\"function(){}\"", "backends[0].descriptor.render" },
	{ "backends.0.descriptor.settings.fields.0.type", "\"html\"",
	  "backends[0].descriptor.settings.fields[0].type" },
	{ "backends.0.descriptor.settings.fields.1.type", "\"callback\"",
	  "backends[0].descriptor.settings.fields[1].type" },
	{ "backends.0.descriptor.settings.fields.0.onChange", "\"x()\"",
	  "backends[0].descriptor.settings.fields[0].onChange" },
	{ "backends.0.descriptor.claims.isolation", "\"none\"",
	  "backends[0].descriptor.claims.isolation" },
};

int main(void)
{
	_cleanup_json_ json_t *base = load_test_pack();
	_cleanup_(pack_manifest_freep) struct pack_manifest *m = NULL;
	struct field_error fe = { 0 };
	int r;

	plan_lazy();
	r = pack_manifest_from_json(base, &m, &fe);
	is_int(0, r, "the test pack's manifest parses (%s: %s)", fe.field, fe.reason);
	if (m) {
		is_str("org.cordon.test", m->id, "its id");
		ok(m->n_backends >= 1, "its backends");
		ok(pack_manifest_backend(m, "test") && !pack_manifest_backend(m, "nope"),
		   "found by kind");
		is_int(PACK_NETWORK_NONE, m->network, "network none by default");
	}
	{
		_cleanup_json_ json_t *j = json_deep_copy(base), *asks = NULL;
		_cleanup_(pack_manifest_freep) struct pack_manifest *pm = NULL;
		struct field_error e = { 0 };

		json_object_set_new(j, "network", json_string("proxy"));
		json_object_set_new(j, "domains",
				    json_pack("[s,s]", "api.example.com", "*.box.example:8443"));
		json_object_set_new(j, "hostSockets",
				    json_pack("[{s:s,s:s}]", "name", "engine", "path",
					      "/run/e.sock"));
		json_object_set_new(j, "env", json_pack("[s]", "DOCKER_HOST"));
		r = pack_manifest_from_json(j, &pm, &e);
		is_int(0, r, "proxy with its domains, a host socket and a variable parse (%s: %s)",
		       e.field, e.reason);
		asks = pm ? pack_manifest_asks_to_json(pm) : NULL;
		ok(asks && streq_ptr(json_string_value(json_object_get(asks, "network")), "proxy") &&
			   json_array_size(json_object_get(asks, "domains")) == 2 &&
			   streq_ptr(json_string_value(json_object_get(
					     json_array_get(json_object_get(asks, "hostSockets"), 0),
					     "path")),
				     "/run/e.sock") &&
			   streq_ptr(json_string_value(
					     json_array_get(json_object_get(asks, "env"), 0)),
				     "DOCKER_HOST"),
		   "and what it asks is shown");
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct field_error e = { 0 };

		r = parse_with(base, bad[i].path, bad[i].value, &e);
		ok(r < 0 && streq(e.field, bad[i].field),
		   "%s=%s refused naming %s (got %d, %s: %s)", bad[i].path, bad[i].value,
		   bad[i].field, r, e.field, e.reason);
	}
	{
		struct field_error e = { 0 };

		r = parse_with(
			base, "backends.1",
			"{\"kind\":\"test\",\"descriptor\":{\"kind\":\"test\",\"name\":\"x\","
			"\"description\":\"\",\"claims\":{\"platforms\":[\"linux\"],"
			"\"enforces\":[],\"isolation\":\"vm\"}}}",
			&e);
		ok(r < 0 && streq(e.field, "backends[1].kind"), "a duplicate kind is refused (%s)",
		   e.field);
	}
	ok(pack_relative_path_is_valid("bin/pack-1.0_x+y"), "a plain relative path");
	ok(!pack_relative_path_is_valid("") && !pack_relative_path_is_valid("a b") &&
		   !pack_relative_path_is_valid("bin/.."),
	   "empty, spaces and dot-dot refused");
	{
		struct pack_manifest *p = NULL;
		struct field_error e = { 0 };

		is_int(-EBADMSG, pack_manifest_parse("{\"id\":1,\"id\":2}", 15, &p, &e),
		       "duplicate keys refused");
		is_int(-EFBIG, pack_manifest_parse("{}", PACK_MANIFEST_MAX_BYTES + 1, &p, &e),
		       "an oversize manifest refused before parsing");
	}
	return tap_exit_status();
}

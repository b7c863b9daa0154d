/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pack manifests (docs/PROTOCOL.md §6.1): the pack.json at the top of a pack directory. Pure: jansson and the
 * descriptor parser only, no I/O but the parse of a caller-supplied buffer.
 *
 *   {"id": "org.example.cloud",          stable pack id (backend_pack_id_is_valid())
 *    "version": "1.2.0",                 [0-9A-Za-z.+~-], 1..64 bytes
 *    "description": "…",                 display text (backend_text_is_safe())
 *    "executable": "bin/cloud-pack",     relative path inside the pack: components of
 *                                        [A-Za-z0-9._+-], none "." or "..", none starting
 *                                        with "."; at most 255 bytes
 *    "network": "none",                  optional: the pack process's own network, "none"
 *                                        (default), "loopback", "proxy" or "host"; the admin
 *                                        floor of the launcher still decides
 *    "domains": ["api.example.com"],     with "proxy" only, and required then: the domains its
 *                                        own API needs ("name", "*.suffix", either with
 *                                        ":port"), 1..64
 *    "hostSockets": [{"name": "engine",  optional, 0..8: host sockets it asks for (a container
 *                     "path": "/run/x.sock"}]   engine's); each given only if the admin
 *                                        floor's packSockets lists its path
 *    "env": ["DOCKER_HOST"],             optional, 0..8: variables of the controller's
 *                                        environment its process gets when set there
 *                                        ([A-Z_][A-Z0-9_]*, at most 64 bytes; not PATH, HOME,
 *                                        nor LD_*)
 *    "backends": [{"kind": "cloud", "descriptor": {…}}]}   1..16, kinds unique; each
 *                                        descriptor as backend-descriptor.h (a pack's: no
 *                                        isolation "none"), its "kind" equal to the entry's
 *
 * Unknown keys anywhere are refused with their JSON path ("backends[0].descriptor.claims.x").
 */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "backends/backend-descriptor.h"
#include "ipc/ipc-json.h"

#define PACK_MANIFEST_NAME "pack.json"
#define PACK_MANIFEST_MAX_BYTES ((size_t)1024 * 1024)
#define PACK_BACKENDS_MAX 16
#define PACK_VERSION_MAX 64
#define PACK_EXECUTABLE_MAX 255

enum pack_network {
	PACK_NETWORK_NONE,
	PACK_NETWORK_LOOPBACK,
	PACK_NETWORK_HOST,
	PACK_NETWORK_PROXY,
};

#define PACK_DOMAINS_MAX 64
#define PACK_DOMAIN_MAX 260 /* a DNS name and ":port" */
#define PACK_SOCKETS_MAX 8
#define PACK_SOCKET_NAME_MAX 32
#define PACK_ENV_MAX 8
#define PACK_ENV_NAME_MAX 64

struct pack_socket {
	char *name; /* [a-z0-9-], 1..32: how the pack and `cordon pack install` call it */
	char *path; /* absolute, normalized */
};

struct pack_backend_entry {
	char *kind;
	struct backend_descriptor *descriptor;
	json_t *descriptor_json; /* the normalized descriptor (backend_descriptor_to_json()) */
};

struct pack_manifest {
	char *id;
	char *version;
	char *description;
	char *executable;
	enum pack_network network;
	char **domains; /* network "proxy": what its own API needs; NULL otherwise */
	struct pack_socket *sockets;
	size_t n_sockets;
	char **env; /* names passed from the controller's environment; NULL: none */
	struct pack_backend_entry *backends;
	size_t n_backends;
};

const char *pack_network_to_string(enum pack_network n);
/* What a pack asks for (network, domains, host sockets, environment), as `pack.list` shows and
 * `cordon pack install` says before the pack is enabled: a new reference. */
json_t *pack_manifest_asks_to_json(const struct pack_manifest *m);
/* A relative path inside a pack, as "executable" must be. */
bool pack_relative_path_is_valid(const char *p);

/* Validate j (borrowed) as a manifest; -EINVAL/-E2BIG/-ENOMEM with err naming the field. */
int pack_manifest_from_json(json_t *j, struct pack_manifest **ret, struct field_error *err);
/* Parse len bytes (at most PACK_MANIFEST_MAX_BYTES, else -EFBIG), duplicate keys refused. */
int pack_manifest_parse(const char *buf, size_t len, struct pack_manifest **ret,
			struct field_error *err);
const struct pack_backend_entry *pack_manifest_backend(const struct pack_manifest *m,
						       const char *kind);
void pack_manifest_free(struct pack_manifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct pack_manifest *, pack_manifest_free)
#define _cleanup_pack_manifest_ _cleanup_(pack_manifest_freep)

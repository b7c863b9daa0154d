/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend descriptor reader on arbitrary bytes, as a pack manifest would deliver them: parse
 * (as a pack's and as a built-in's), and for what is accepted, the normalized document must
 * parse again to the same document; the bytes are also tried as a backend reference.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "backends/backend-descriptor.h"
#include "tests/fuzz/fuzz.h"

static void check_descriptor(const uint8_t *data, size_t size, unsigned flags)
{
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL, *e = NULL;
	_cleanup_json_ json_t *j1 = NULL, *j2 = NULL;
	struct field_error err;

	if (backend_descriptor_parse((const char *)data, size, flags, &d, &err) < 0)
		return;
	if (backend_descriptor_to_json(d, &j1) < 0)
		return;
	/* What the parser accepted, its own output must satisfy, unchanged. */
	if (backend_descriptor_from_json(j1, flags, "", &e, &err) < 0 ||
	    backend_descriptor_to_json(e, &j2) < 0 || !json_equal(j1, j2))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[BACKEND_REF_TEXT_MAX + 8], back[BACKEND_REF_TEXT_MAX];
	struct backend_ref ref;

	check_descriptor(data, size, 0);
	check_descriptor(data, size, BACKEND_DESCRIPTOR_BUILTIN);

	if (size < sizeof(text)) {
		memcpy(text, data, size);
		text[size] = '\0';
		if (backend_ref_parse(text, &ref) == 0 &&
		    (backend_ref_format(&ref, back, sizeof(back)) < 0 || strcmp(back, text) != 0))
			abort(); /* the text form is canonical */
	}
	return 0;
}

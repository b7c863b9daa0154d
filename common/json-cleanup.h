/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <jansson.h>

#include "common/cleanup.h"

/* jansson's own json_decrefp() accepts NULL (json_decref ignores it). */
#define _cleanup_json_ _cleanup_(json_decrefp)

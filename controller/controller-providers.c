/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What this build adds to the built-in providers and the method table: nothing. The test build
 * links its own lists instead (tests/helpers/controller-backend-test.c). */
#include "config.h"

#include "controller/controller.h"

const struct backend_provider *const controller_extra_providers[] = { NULL };
const struct controller_method controller_extra_methods[] = { {} };

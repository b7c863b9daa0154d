/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* builtin:vm: a QEMU micro-VM per spawn (vm.c). */
#pragma once

#include "backends/backend.h"

extern const struct backend_ops backend_vm_ops;

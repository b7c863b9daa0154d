/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* builtin:vm: QEMU micro-VMs, one per lease and one per one-shot command (vm.c). */
#pragma once

#include "backends/backend.h"

extern const struct backend_ops backend_vm_ops;

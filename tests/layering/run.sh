#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The layering of the controller and the backends, on the objects this build made (TAP).
exec python3 "$top_srcdir/tests/layering/layering.py" "$top_srcdir" "$top_builddir"

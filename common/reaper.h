/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Children let go of but not yet exited, reaped from the event loop when they do (their pidfd
 * becomes readable), never waited for in the loop. Used by the controller for the launchers it
 * drops and by launcherd for its connections' receivers.
 */
#pragma once

#include "common/event.h"

struct reaper;

/* Reap pidfd's child (ours) once it has exited; the list owns pidfd then. -errno when it cannot
 * be watched: pidfd stays the caller's. */
int reap_later(struct event_loop *l, struct reaper **list, int pidfd);

/* At exit: stop watching them. With wait_ms > 0, each gets that long to end and is reaped if it
 * did; the others go to whoever inherits them. */
void reapers_release(struct reaper **list, int wait_ms);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event stream: spawn, exit, limit kills, policy refusals, … as JSON lines, to a log file
 * (state dir, owner-only, rotated at a size bound), a ring of recent events, and to clients that
 * follow. Events never carry secret values.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller.h"
#include "ipc/ipc-json.h"

#define EVENTS_RING_MAX 1000
#define EVENTS_LOG_MAX (16U * 1024U * 1024U)

static int open_log(struct controller *c)
{
	_cleanup_free_ char *path = strdup_printf("%s/events.log", c->state_dir);
	int fd;

	if (!path)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return log_warning_errno(errno, "cannot open the event log \"%s\": %m", path);
	c->events_log_fd = fd;
	return 0;
}

int controller_events_open(struct controller *c)
{
	c->events_log_fd = -1;
	c->events_ring = json_array();
	if (!c->events_ring)
		return -ENOMEM;
	return open_log(c);
}

static void rotate_if_needed(struct controller *c)
{
	_cleanup_free_ char *path = NULL, *old = NULL;
	struct stat st;

	if (c->events_log_fd < 0 || fstat(c->events_log_fd, &st) < 0 ||
	    (unsigned long long)st.st_size < EVENTS_LOG_MAX)
		return;
	path = strdup_printf("%s/events.log", c->state_dir);
	old = strdup_printf("%s/events.log.1", c->state_dir);
	if (!path || !old)
		return;
	(void)rename(path, old);
	c->events_log_fd = safe_close(c->events_log_fd);
	(void)open_log(c);
}

/* A denial names the launcher's sandbox ("instance"); the user knows the process: the one the
 * latest spawn event of that instance named (while it is still in the ring). */
static void denial_add_process(struct controller *c, json_t *ev)
{
	const char *inst = json_string_value(json_object_get(ev, "instance"));

	if (!inst)
		return;
	for (size_t i = json_array_size(c->events_ring); i-- > 0;) {
		json_t *e = json_array_get(c->events_ring, i);
		json_t *pid = json_object_get(e, "processId"),
		       *sb = json_object_get(e, "sandboxId");

		if (!streq_ptr(json_string_value(json_object_get(e, "type")), "spawn") ||
		    !streq_ptr(json_string_value(json_object_get(e, "instance")), inst))
			continue;
		if (json_is_string(pid))
			(void)json_object_set(ev, "processId", pid);
		if (json_is_string(sb))
			(void)json_object_set(ev, "sandboxId", sb);
		return;
	}
}

/* A denial the launcher sent before the sandbox's spawn answer named no process: it gets the
 * spawn event's now. */
static void denials_name_process(struct controller *c, json_t *spawn)
{
	json_t *inst = json_object_get(spawn, "instance"),
	       *pid = json_object_get(spawn, "processId");

	if (!json_is_string(inst) || !json_is_string(pid))
		return;
	for (size_t i = json_array_size(c->events_ring); i-- > 0;) {
		json_t *e = json_array_get(c->events_ring, i);

		if (streq_ptr(json_string_value(json_object_get(e, "type")), "denial") &&
		    json_equal(json_object_get(e, "instance"), inst) &&
		    !json_object_get(e, "processId")) {
			(void)json_object_set(e, "processId", pid);
			if (json_object_get(spawn, "sandboxId"))
				(void)json_object_set(e, "sandboxId",
						      json_object_get(spawn, "sandboxId"));
		}
	}
}

void controller_event(struct controller *c, const char *type, json_t *fields)
{
	_cleanup_json_ json_t *ev = fields ? fields : json_object();
	_cleanup_free_ char *line = NULL;
	struct timespec ts;
	char when[64];
	struct tm tm;

	if (!ev)
		return;
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	(void)snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
		       tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		       tm.tm_sec, ts.tv_nsec / 1000L);
	json_object_set_new(ev, "time", json_string(when));
	json_object_set_new(ev, "type", json_string(type));
	if (streq(type, "denial"))
		denial_add_process(c, ev);
	else if (streq(type, "spawn"))
		denials_name_process(c, ev);

	line = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	if (line && c->events_log_fd >= 0) {
		size_t n = strlen(line);

		line[n] = '\n';
		(void)loop_write(c->events_log_fd, line, n + 1);
		line[n] = '\0';
		rotate_if_needed(c);
	}

	json_array_append(c->events_ring, ev);
	while (json_array_size(c->events_ring) > EVENTS_RING_MAX)
		json_array_remove(c->events_ring, 0);

	for (struct client *cl = c->clients; cl; cl = cl->next)
		if (cl->subscribed)
			(void)client_notify(cl, "event", json_incref(ev));
}

int method_events_subscribe(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "follow", NULL };
	struct field_error fe = { 0 };
	bool follow = false, reader;
	json_t *hello;
	int r;

	r = ipc_json_check_keys(params, keys, "params", &fe);
	if (r >= 0)
		r = ipc_json_get_bool(params, "follow", false, "params", &follow, &fe);
	if (r < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	/* Reply with the backlog first, then live events follow as notifications. Whether the
	 * active launcher reads denials tells a client whether more may still come. */
	hello = controller_launcher_hello(cl->ctl);
	reader = json_is_true(json_object_get(json_object_get(hello, "denials"), "reader"));
	r = client_reply(cl, id,
			 json_pack("{s:O,s:b}", "events", cl->ctl->events_ring, "denialsReader",
				   reader));
	cl->subscribed = follow;
	return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proxy-harness: the proxy engine on a loopback listener in its own event loop, with rules from a
 * policy file, so tests/integration/proxy-engine.sh can drive it with real clients without a
 * launcher or a controller.
 *
 *   proxy-harness --policy FILE [--port N] [--events FILE] [--control FIFO]
 *                 [--max-connections N] [--idle-timeout-ms N] [--setup-timeout-ms N]
 *                 [--buffer-size BYTES] [--buffer-max BYTES]
 *
 * Prints the port it listens on (127.0.0.1) as one line on stdout once it serves. Every audit
 * event is appended to --events as one JSON line ({"type":"net", …}, the fields the controller
 * emits). --control names a FIFO read for one command per line: "allow PATTERN", "deny PATTERN"
 * (the live changes of `cordon net allow|deny`), "reload" (the policy file again), "stats"; each
 * answers with a {"type":"control", …} line in the events file, carrying the rules in force,
 * the live connection count and this process's VmRSS. --buffer-max: what bulk traffic grows a
 * tunnel's buffers to (0: they never grow). SIGTERM or SIGINT:
 * stop the listener (allowed connections report "shutdown") and exit 0.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "policy/policy-parse.h"

struct harness {
	struct event_loop *loop;
	struct proxy_listener *listener;
	const char *policy_path;
	FILE *events;
	int control_fd;
	char line[4096];
	size_t line_len;
};

static void emit(struct harness *h, json_t *o)
{
	_cleanup_free_ char *s = NULL;

	if (!o)
		return;
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (s && h->events) {
		fprintf(h->events, "%s\n", s);
		fflush(h->events);
	}
}

static void on_event(const struct proxy_event *e, void *userdata)
{
	json_t *o = proxy_event_to_json(e);

	if (o)
		json_object_set_new(o, "type", json_string("net"));
	emit(userdata, o);
}

static int load_rules(const char *path, struct proxy_rules **ret)
{
	_cleanup_policy_ struct policy *p = NULL;
	struct field_error fe = { 0 };
	int r;

	r = policy_parse_file(path, &p, &fe);
	if (r < 0) {
		fprintf(stderr, "proxy-harness: \"%s\": %s: %s\n", path, fe.field, fe.reason);
		return r;
	}
	return proxy_rules_from_policy(p, ret);
}

static long vm_rss_kib(void)
{
	_cleanup_free_ char *s = NULL;
	const char *p;

	if (read_full_file("/proc/self/status", 1 << 16, &s, NULL) < 0)
		return -1;
	p = strstr(s, "VmRSS:");
	return p ? strtol(p + 6, NULL, 10) : -1;
}

static void control_command(struct harness *h, const char *cmd)
{
	_cleanup_proxy_rules_ struct proxy_rules *n = NULL;
	json_t *o, *rules = NULL;
	const char *arg;
	int r = 0;

	if ((arg = startswith(cmd, "allow ")))
		r = proxy_rules_allow(proxy_listener_rules(h->listener), arg, &n);
	else if ((arg = startswith(cmd, "deny ")))
		r = proxy_rules_deny(proxy_listener_rules(h->listener), arg, &n);
	else if (streq(cmd, "reload"))
		r = load_rules(h->policy_path, &n);
	else if (!streq(cmd, "stats"))
		r = -EINVAL;
	if (n)
		proxy_listener_update_rules(h->listener, n);
	(void)proxy_rules_to_json(proxy_listener_rules(h->listener), &rules);
	o = json_pack("{s:s, s:s, s:i, s:o*, s:i, s:I}", "type", "control", "command", cmd,
		      "result", r, "rules", rules, "connections",
		      (int)proxy_listener_connections(h->listener), "vmRssKiB",
		      (json_int_t)vm_rss_kib());
	emit(h, o);
}

static int on_control(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct harness *h = userdata;
	ssize_t n = read(fd, h->line + h->line_len, sizeof(h->line) - 1 - h->line_len);

	if (n <= 0)
		return 0;
	h->line_len += (size_t)n;
	for (;;) {
		char *nl = memchr(h->line, '\n', h->line_len);
		size_t k;

		if (!nl) {
			if (h->line_len == sizeof(h->line) - 1)
				h->line_len = 0; /* an over-long line is dropped */
			return 0;
		}
		*nl = '\0';
		k = (size_t)(nl - h->line) + 1;
		if (nl > h->line)
			control_command(h, h->line);
		memmove(h->line, h->line + k, h->line_len - k);
		h->line_len -= k;
	}
}

static int on_signal(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct harness *h = userdata;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		event_loop_exit(h->loop, 0);
	return 0;
}

static int parse_u64(const char *s, uint64_t *ret)
{
	return safe_atou64(s, ret);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "policy", required_argument, NULL, 'p' },
					      { "port", required_argument, NULL, 'P' },
					      { "events", required_argument, NULL, 'e' },
					      { "control", required_argument, NULL, 'c' },
					      { "max-connections", required_argument, NULL, 'm' },
					      { "idle-timeout-ms", required_argument, NULL, 'i' },
					      { "setup-timeout-ms", required_argument, NULL, 's' },
					      { "buffer-size", required_argument, NULL, 'b' },
					      { "buffer-max", required_argument, NULL, 'B' },
					      {} };
	struct harness h = { .control_fd = -1 };
	_cleanup_proxy_rules_ struct proxy_rules *rules = NULL;
	struct event_source *sig_src = NULL, *ctl_src = NULL;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct proxy_limits limits;
	_cleanup_close_ int sfd = -1;
	const char *events_path = NULL, *control_path = NULL;
	uint64_t v, port = 0;
	sigset_t mask;
	int c, fd, r, one = 1;

	proxy_limits_default(&limits);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case 'p':
			h.policy_path = optarg;
			break;
		case 'P':
			if (parse_u64(optarg, &port) < 0 || port > 65535)
				goto usage;
			break;
		case 'e':
			events_path = optarg;
			break;
		case 'c':
			control_path = optarg;
			break;
		case 'm':
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > 100000)
				goto usage;
			limits.max_connections = (unsigned)v;
			break;
		case 'i':
			if (parse_u64(optarg, &v) < 0 || v == 0)
				goto usage;
			limits.idle_timeout_usec = v * 1000ULL;
			break;
		case 's':
			if (parse_u64(optarg, &v) < 0 || v == 0)
				goto usage;
			limits.setup_timeout_usec = v * 1000ULL;
			break;
		case 'b':
			if (parse_u64(optarg, &v) < 0 || v < 512 || v > (1U << 30))
				goto usage;
			limits.buffer_size = (size_t)v;
			break;
		case 'B':
			if (parse_u64(optarg, &v) < 0 || v > (1U << 30))
				goto usage;
			limits.buffer_max = (size_t)v;
			break;
		default:
			goto usage;
		}
	}
	if (!h.policy_path || optind != argc)
		goto usage;

	if (load_rules(h.policy_path, &rules) < 0)
		return 1;
	if (events_path) {
		h.events = fopen(events_path, "ae");
		if (!h.events) {
			fprintf(stderr, "proxy-harness: \"%s\": %s\n", events_path,
				strerror(errno));
			return 1;
		}
	}

	(void)sigemptyset(&mask);
	(void)sigaddset(&mask, SIGTERM);
	(void)sigaddset(&mask, SIGINT);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sfd < 0)
		return perror("proxy-harness: socket"), 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 256) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) < 0)
		return perror("proxy-harness: bind"), 1;

	r = event_loop_new(&h.loop);
	if (r < 0)
		return fprintf(stderr, "proxy-harness: event loop: %s\n", strerror(-r)), 1;
	r = proxy_listener_new(h.loop, fd, rules, &limits, on_event, &h, &h.listener);
	if (r < 0)
		return fprintf(stderr, "proxy-harness: listener: %s\n", strerror(-r)), 1;
	r = event_add_io(h.loop, sfd, EPOLLIN, on_signal, &h, &sig_src);
	if (r < 0)
		return fprintf(stderr, "proxy-harness: signalfd: %s\n", strerror(-r)), 1;
	if (control_path) {
		/* O_RDWR: the FIFO never reports EOF when a writer goes away. */
		h.control_fd = open(control_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (h.control_fd < 0)
			return fprintf(stderr, "proxy-harness: \"%s\": %s\n", control_path,
				       strerror(errno)),
			       1;
		r = event_add_io(h.loop, h.control_fd, EPOLLIN, on_control, &h, &ctl_src);
		if (r < 0)
			return fprintf(stderr, "proxy-harness: control: %s\n", strerror(-r)), 1;
	}

	printf("%u\n", (unsigned)ntohs(sin.sin_port));
	fflush(stdout);

	r = event_loop_run(h.loop);

	h.listener = proxy_listener_free(h.listener);
	event_source_free(sig_src);
	event_source_free(ctl_src);
	safe_close(h.control_fd);
	event_loop_free(h.loop);
	if (h.events)
		fclose(h.events);
	return r < 0 ? 1 : 0;

usage:
	fprintf(stderr, "usage: proxy-harness --policy FILE [--port N] [--events FILE] "
			"[--control FIFO] [--max-connections N] [--idle-timeout-ms N] "
			"[--setup-timeout-ms N] [--buffer-size BYTES] [--buffer-max BYTES]\n");
	return 2;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit record parser of launcherd's denial reader (launcherd/launcherd-audit-record.c), on
 * records as kernel 6.18 wrote them (Landlock ABI 7, seccomp with SECCOMP_FILTER_FLAG_LOG), and
 * on the malformed shapes it must refuse whole.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launcherd/launcherd-audit-record.h"
#include "tests/tap.h"

static struct audit_record rec;

static int parse(int type, const char *text)
{
	return audit_record_parse(type, text, strlen(text), &rec);
}

static void test_landlock(void)
{
	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1796157226.438:53): domain=10275d02f blockers=fs.write_file "
		     "path=\"/tmp/den/existing\" dev=\"vda\" ino=10961926"),
	       "fs access record parses");
	ok(rec.msec == 1796157226438ULL && rec.serial == 53, "its time and serial");
	ok(rec.domain == 0x10275d02fULL, "its domain, hex");
	is_str("fs.write_file", rec.blockers, "its blockers");
	is_str("/tmp/den/existing", rec.path, "its path");
	is_int(-1, rec.port, "no port");

	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1796157226.446:58): domain=10275d02f blockers=fs.execute,fs.read_file "
		     "path=\"/root/.pyenv/shims/python3\" dev=\"vda\" ino=3483"),
	       "two blockers parse");
	is_str("fs.execute,fs.read_file", rec.blockers, "both kept");

	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1796157226.438:52): domain=10275d02f "
		     "blockers=net.connect_tcp daddr=127.0.0.1 dest=22"),
	       "net access record parses");
	is_int(22, rec.port, "its port");
	is_str("127.0.0.1", rec.addr, "its address");
	is_str("", rec.path, "no path");

	/* A path with a space is hex, as the kernel writes untrusted strings. */
	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1.000:1): domain=1 blockers=fs.make_reg path=2F746D702F6E65772071 "
		     "dev=\"vda\" ino=1"),
	       "hex path parses");
	is_str("/tmp/new q", rec.path, "and is decoded");

	/* An abstract UNIX socket across the sandbox's edge (Landlock scope): hex, a NUL first. */
	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1796168728.080:57213): domain=102878371 "
		     "blockers=scope.abstract_unix_socket path=00636F72646F6E2D7800792D31"),
	       "an abstract socket's scope record parses");
	is_str("scope.abstract_unix_socket", rec.blockers, "its blocker");
	is_str("@cordon-x@y-1", rec.path, "its name, '@' for each NUL, as ss writes it");
	is_int(-EBADMSG,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1.000:1): domain=1 blockers=fs.read_file path=2F0078"),
	       "a file path with a NUL inside is refused");
	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_ACCESS,
		     "audit(1.000:2): domain=1 blockers=scope.signal opid=1 ocomm=\"sleep\""),
	       "a signal's scope record parses");
	is_str("scope.signal", rec.blockers, "its blocker");

	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_DOMAIN,
		     "audit(1796157226.434:51): domain=10275d02f status=allocated mode=enforcing "
		     "pid=27024 uid=1001 exe=\"/tmp/den/probe\" comm=\"probe\""),
	       "domain allocated parses");
	ok(rec.status == AUDIT_DOMAIN_ALLOCATED && rec.pid == 27024 && rec.uid == 1001,
	   "its pid and uid");
	is_str("probe", rec.comm, "its comm");

	is_int(0,
	       parse(CORDON_AUDIT_LANDLOCK_DOMAIN,
		     "audit(1796157226.494:60): domain=10275d02f status=deallocated denials=9"),
	       "domain deallocated parses");
	ok(rec.status == AUDIT_DOMAIN_DEALLOCATED && rec.denials == 9, "its denials");
}

static void test_seccomp(void)
{
	is_int(0,
	       parse(CORDON_AUDIT_SECCOMP,
		     "audit(1796157179.958:36): auid=4294967295 uid=0 gid=0 ses=4294967295 "
		     "pid=22148 comm=\"unshare\" exe=\"/usr/bin/unshare\" sig=0 arch=c000003e "
		     "syscall=272 compat=0 ip=0x7efe223870f7 code=0x50000"),
	       "seccomp record parses");
	ok(rec.pid == 22148 && rec.uid == 0 && rec.syscall == 272, "its pid, uid, syscall");
	ok(rec.arch == 0xc000003eU && rec.code == 0x50000U, "its arch and action");
	ok(rec.session == UINT32_MAX, "an unset session");
	is_str("/usr/bin/unshare", rec.exe, "its exe");

	is_int(0,
	       parse(CORDON_AUDIT_SECCOMP,
		     "audit(1.001:2): auid=1001 uid=1001 gid=1001 ses=17 pid=5 comm=636174206D65 "
		     "exe=\"/usr/bin/cat\" sig=31 arch=c000003e syscall=41 compat=0 ip=0x1 "
		     "code=0x80000000"),
	       "a killing seccomp record parses");
	ok(rec.session == 17 && rec.sig == 31 && rec.code == 0x80000000U, "its session and sig");
	is_str("cat me", rec.comm, "hex comm decoded");
}

static void test_config(void)
{
	is_int(0,
	       parse(CORDON_AUDIT_CONFIG_CHANGE,
		     "audit(1796157166.974:12): op=set audit_enabled=0 old=1 auid=4294967295 "
		     "ses=4294967295 res=1"),
	       "audit_enabled change parses");
	is_int(0, rec.audit_enabled, "its new value");
	is_int(0,
	       parse(CORDON_AUDIT_CONFIG_CHANGE,
		     "audit(1.000:1): op=set audit_backlog_limit=8192 old=64 auid=0 ses=1 res=1"),
	       "another change parses");
	is_int(-1, rec.audit_enabled, "and says nothing of audit_enabled");
	is_int(-EBADMSG,
	       parse(CORDON_AUDIT_CONFIG_CHANGE, "audit(1.000:1): op=set audit_enabled=7 old=1"),
	       "an out-of-range value is refused");
}

static void test_refused(void)
{
	static const struct {
		int type;
		const char *text;
	} bad[] = {
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1) domain=1 blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.00:1): domain=1 blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(x.000:1): domain=1 blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=0 blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1 blockers=FS.READ" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1 blockers=fs.read_file "
						"path=\"/unterminated" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1 blockers=fs.read_file "
						"path=2F0074" }, /* a NUL inside */
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1 blockers=fs.read_file "
						"path=2F7" }, /* odd hex */
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1 blockers=net.connect_tcp "
						"daddr=1.2.3.4 dest=65536" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS, "audit(1.000:1): domain=1 blockers=net.connect_tcp "
						"daddr=1.2.3.4;rm dest=1" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS,
		  "audit(1.000:1): domain=11111111111111111111 blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_ACCESS,
		  "audit(1.000:1): domain=1 =x blockers=fs.read_file" },
		{ CORDON_AUDIT_LANDLOCK_DOMAIN, "audit(1.000:1): domain=1 status=maybe" },
		{ CORDON_AUDIT_LANDLOCK_DOMAIN, "audit(1.000:1): domain=1 status=allocated uid=0" },
		{ CORDON_AUDIT_SECCOMP, "audit(1.000:1): pid=1 code=0x50000" },
		{ CORDON_AUDIT_SECCOMP, "audit(1.000:1): pid=0 syscall=1 code=0x50000" },
		{ CORDON_AUDIT_SECCOMP, "audit(1.000:1): pid=1 syscall=1 code=0x50000 sig=99" },
		{ CORDON_AUDIT_SECCOMP, "audit(1.000:1): pid=-1 syscall=1 code=0x50000" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(bad[i].type, bad[i].text);

		ok(r == -EBADMSG && rec.type == 0, "refused whole: %s", bad[i].text);
	}
	is_int(-ENOENT, parse(1300, "audit(1.000:1): arch=c000003e syscall=1"),
	       "another type is not parsed");
	/* Not NUL-terminated: the parser stays within len. */
	{
		static const char text[] = "audit(1.000:1): domain=1 path=\"/abc\" "
					   "blockers=fs.read_file";
		char *buf = malloc(34);

		if (!buf)
			bail("out of memory");
		memcpy(buf, text, 34); /* up to "/ab */
		is_int(-EBADMSG, audit_record_parse(CORDON_AUDIT_LANDLOCK_ACCESS, buf, 34, &rec),
		       "a quote cut off by the length is refused");
		is_int(0, parse(CORDON_AUDIT_LANDLOCK_ACCESS, text), "whole, it parses");
		/* A NUL inside the text (found by the fuzzer): refused whole, too. */
		memcpy(buf, "audit(1.000:1): domain=1\0 blockers=x", 34);
		is_int(-EBADMSG, audit_record_parse(CORDON_AUDIT_LANDLOCK_ACCESS, buf, 34, &rec),
		       "a NUL inside is refused");
		ok(rec.type == 0, "and nothing is left half-filled");
		free(buf);
	}
}

int main(void)
{
	plan_lazy();
	test_landlock();
	test_seccomp();
	test_config();
	test_refused();
	return tap_exit_status();
}

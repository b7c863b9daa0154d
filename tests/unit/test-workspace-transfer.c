/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * backends/workspace-transfer.c in a temporary directory: a round trip with no change applies
 * nothing; additions, changes (content, mode, symlink target) and deletions are applied; a
 * conflict keeps the host version; each refusal ("../x", an absolute path, a path below a symlink
 * the sandbox made or the host has, hard links and FIFOs, the caller's rules, the size limit)
 * writes nothing anywhere; a truncated or corrupt archive changes nothing and leaves no
 * temporaries; setuid bits are dropped; special files are skipped; write limits and EPIPE.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/workspace-transfer.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/tar.h"
#include "common/util.h"
#include "tests/tap.h"

static char *tmp;

static char *path_of(const char *dir, const char *rel)
{
	return tap_path_in(dir, rel);
}

static void put_file(const char *dir, const char *rel, const char *content, mode_t mode)
{
	_cleanup_free_ char *p = path_of(dir, rel);
	_cleanup_free_ char *parent = strdup(p);
	_cleanup_close_ int fd = -1;

	if (!parent)
		bail("out of memory");
	*strrchr(parent, '/') = '\0';
	if (mkdir_p(parent, 0755) < 0)
		bail("mkdir_p %s: %m", parent);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || loop_write(fd, content, strlen(content)) < 0 || fchmod(fd, mode) < 0)
		bail("writing %s: %m", p);
}

static void put_dir(const char *dir, const char *rel, mode_t mode)
{
	_cleanup_free_ char *p = path_of(dir, rel);

	if (mkdir_p(p, 0755) < 0 || chmod(p, mode) < 0)
		bail("mkdir %s: %m", p);
}

static void put_symlink(const char *dir, const char *rel, const char *target)
{
	_cleanup_free_ char *p = path_of(dir, rel);

	if (symlink(target, p) < 0)
		bail("symlink %s: %m", p);
}

static char *read_text(const char *dir, const char *rel)
{
	_cleanup_free_ char *p = path_of(dir, rel);
	char *data = NULL;
	size_t len;

	if (read_full_file(p, 1024 * 1024, &data, &len) < 0)
		return NULL;
	return data;
}

static bool exists(const char *dir, const char *rel)
{
	_cleanup_free_ char *p = path_of(dir, rel);
	struct stat st;

	return lstat(p, &st) == 0;
}

static mode_t mode_of(const char *dir, const char *rel)
{
	_cleanup_free_ char *p = path_of(dir, rel);
	struct stat st;

	return lstat(p, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* A listing of the tree: one line per entry, "path type mode content-or-target", sorted. */
static char **listing;
static size_t listing_root_len;

static int list_one(const char *fpath, const struct stat *st, int type, struct FTW *ftw)
{
	char line[4608], target[4097] = "";
	_cleanup_free_ char *content = NULL;
	size_t n = strv_length(listing), len;

	(void)type;
	(void)ftw;
	if (strlen(fpath) <= listing_root_len)
		return 0;
	if (S_ISREG(st->st_mode))
		(void)read_full_file(fpath, 1024 * 1024, &content, &len);
	else if (S_ISLNK(st->st_mode) && readlink(fpath, target, sizeof(target) - 1) < 0)
		return -1;
	(void)snprintf(line, sizeof(line), "%s %o %o %s%s", fpath + listing_root_len,
		       (unsigned)(st->st_mode & S_IFMT), (unsigned)(st->st_mode & 07777),
		       content ? content : "", target);
	listing = realloc(listing, (n + 2) * sizeof(*listing));
	if (!listing || !(listing[n] = strdup(line)))
		bail("out of memory");
	listing[n + 1] = NULL;
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *tree_listing(const char *dir)
{
	char *out = NULL;
	size_t total = 1;

	listing = calloc(1, sizeof(*listing));
	listing_root_len = strlen(dir);
	if (!listing || nftw(dir, list_one, 16, FTW_PHYS) < 0)
		bail("listing %s: %m", dir);
	qsort(listing, strv_length(listing), sizeof(*listing), line_cmp);
	for (char **l = listing; *l; l++)
		total += strlen(*l) + 1;
	out = calloc(1, total);
	if (!out)
		bail("out of memory");
	for (char **l = listing; *l; l++) {
		strcat(out, *l);
		strcat(out, "\n");
	}
	strv_free(listing);
	listing = NULL;
	return out;
}

static int open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		bail("open %s: %m", dir);
	return fd;
}

static int memfd(void)
{
	int fd = memfd_create("test-ws", MFD_CLOEXEC);

	if (fd < 0)
		bail("memfd_create: %m");
	return fd;
}

static char *new_dir(const char *name)
{
	char *p = path_of(tmp, name);

	if (mkdir(p, 0755) < 0)
		bail("mkdir %s: %m", p);
	return p;
}

/* Archive dir into a new memfd (rewound); *ret_snapshot if wanted. */
static int archive_of(const char *dir, struct ws_snapshot **ret_snapshot, struct ws_report *rep)
{
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_close_ int dfd = open_dir(dir);
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_report own;
	int fd = memfd(), r;

	if (!rep) {
		if (ws_report_init(&own) < 0)
			bail("out of memory");
	}
	r = ws_archive_write(dfd, fd, &lim, &snap, rep ? rep : &own);
	if (r < 0)
		bail("ws_archive_write %s: %s (%s)", dir, strerror(-r), (rep ? rep : &own)->error);
	if (!rep)
		ws_report_done(&own);
	if (lseek(fd, 0, SEEK_SET) != 0)
		bail("lseek: %m");
	if (ret_snapshot)
		*ret_snapshot = TAKE_PTR(snap);
	return fd;
}

static int apply(const char *dir, int archive_fd, const struct ws_snapshot *snap,
		 const struct ws_limits *lim, const struct ws_rules *rules, struct ws_report *rep)
{
	_cleanup_close_ int dfd = open_dir(dir);
	struct ws_limits def = WS_LIMITS_DEFAULT;

	if (ws_report_init(rep) < 0)
		bail("out of memory");
	return ws_archive_apply(dfd, archive_fd, snap, lim ? lim : &def, rules, rep);
}

/* The report item for path: its action and reason, or NULL. */
static const char *item_action(const struct ws_report *rep, const char *path, const char **reason)
{
	size_t i;
	json_t *it;

	json_array_foreach(rep->items, i, it) {
		if (streq(json_string_value(json_object_get(it, "path")), path)) {
			if (reason)
				*reason = json_string_value(json_object_get(it, "reason"));
			return json_string_value(json_object_get(it, "action"));
		}
	}
	return NULL;
}

static void expect_item(const struct ws_report *rep, const char *path, const char *action,
			const char *reason_part)
{
	const char *reason = NULL;
	const char *got = item_action(rep, path, &reason);

	if (!ok(streq_ptr(got, action) && (!reason_part || (reason && strstr(reason, reason_part))),
		"\"%s\": %s%s%s", path, action, reason_part ? " — " : "",
		reason_part ? reason_part : "")) {
		_cleanup_json_ json_t *j = ws_report_to_json(rep);
		_cleanup_free_ char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		diag("got %s (%s); report %s", got ? got : "nothing", reason ? reason : "",
		     s ? s : "?");
	}
}

static void dump_report(const char *what, const struct ws_report *rep)
{
	_cleanup_json_ json_t *j = ws_report_to_json(rep);
	_cleanup_free_ char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	diag("%s: %s", what, s ? s : "?");
}

static void make_base(const char *dir)
{
	put_file(dir, "a.txt", "A", 0644);
	put_file(dir, "dir/b.txt", "B", 0644);
	put_file(dir, "dir/sub/c.txt", "C", 0600);
	put_symlink(dir, "link", "a.txt");
	put_dir(dir, "emptydir", 0755);
	put_file(dir, "gone.txt", "G", 0644);
	put_file(dir, "gonedir/inner.txt", "I", 0644);
	put_file(dir, "mode.txt", "M", 0644);
	put_file(dir, "type.txt", "T", 0644);
}

static void test_round_trip_and_changes(void)
{
	_cleanup_free_ char *host = new_dir("host"), *sandbox = new_dir("sandbox");
	_cleanup_free_ char *before = NULL, *after = NULL, *fifo = NULL, *s = NULL;
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_close_ int a1 = -1, a2 = -1;
	struct ws_report wrep, rep;
	struct tar_reader tr;
	_cleanup_free_ struct tar_entry *te = calloc(1, sizeof(*te));
	bool fifo_in_archive = false;
	struct stat st1, st2;
	int r;

	make_base(host);
	fifo = path_of(host, "fifo");
	if (mkfifo(fifo, 0644) < 0)
		bail("mkfifo: %m");

	if (ws_report_init(&wrep) < 0)
		bail("out of memory");
	a1 = archive_of(host, &snap, &wrep);
	expect_item(&wrep, "fifo", "skipped", "FIFO");
	is_int(1, (long long)wrep.counts[WS_SKIPPED], "write: one skipped entry");
	/* a.txt dir dir/b.txt dir/sub dir/sub/c.txt link emptydir gone.txt gonedir
	 * gonedir/inner.txt mode.txt type.txt */
	is_int(12, (long long)ws_snapshot_size(snap), "snapshot has 12 paths");
	ws_report_done(&wrep);

	tar_reader_init_fd(&tr, a1);
	while ((r = tar_reader_next(&tr, te)) == 1)
		if (streq(te->path, "fifo"))
			fifo_in_archive = true;
	is_int(0, r, "the written archive reads back to its end");
	ok(!fifo_in_archive, "the FIFO is not in the archive");

	/* Applying the archive as it was sent changes nothing, not even an inode. */
	before = tree_listing(host);
	if (lstat(fifo, &st1) < 0)
		bail("lstat: %m");
	s = path_of(host, "a.txt");
	if (lstat(s, &st1) < 0)
		bail("lstat: %m");
	if (lseek(a1, 0, SEEK_SET) != 0)
		bail("lseek: %m");
	is_int(0, apply(host, a1, snap, NULL, NULL, &rep), "unchanged archive applies");
	ok(rep.counts[WS_ADDED] + rep.counts[WS_CHANGED] + rep.counts[WS_DELETED] +
			   rep.counts[WS_CONFLICT] + rep.counts[WS_REFUSED] +
			   rep.counts[WS_SKIPPED] ==
		   0,
	   "unchanged archive: no action");
	is_int(12, (long long)rep.unchanged, "unchanged archive: 12 unchanged entries");
	after = tree_listing(host);
	is_str(before, after, "unchanged archive: the tree is the same");
	ok(lstat(s, &st2) == 0 && st1.st_ino == st2.st_ino &&
		   st1.st_ctim.tv_nsec == st2.st_ctim.tv_nsec,
	   "unchanged archive: a.txt not rewritten");
	ok(exists(host, "fifo"), "the FIFO (never sent) is left alone");
	ws_report_done(&rep);

	/* The sandbox's version: changes of every kind. */
	make_base(sandbox);
	put_file(sandbox, "dir/b.txt", "B2", 0644);
	{
		_cleanup_free_ char *p = path_of(sandbox, "link");

		if (unlink(p) < 0)
			bail("unlink: %m");
	}
	put_symlink(sandbox, "link", "dir/b.txt");
	put_file(sandbox, "new.txt", "N", 0640);
	put_file(sandbox, "newdir/deep/x.txt", "X", 0644);
	put_dir(sandbox, "newdir", 0750);
	put_file(sandbox, "suid.txt", "S", 06755);
	put_file(sandbox, "mode.txt", "M", 0755);
	put_dir(sandbox, "ro", 0555);
	{
		_cleanup_free_ char *p = path_of(sandbox, "gone.txt"),
				    *q = path_of(sandbox, "gonedir"),
				    *t = path_of(sandbox, "type.txt");

		if (unlink(p) < 0 || tap_rm_rf(q) < 0 || unlink(t) < 0)
			bail("removing: %m");
	}
	put_dir(sandbox, "type.txt", 0755);
	put_file(sandbox, "type.txt/in", "in", 0644);
	a2 = archive_of(sandbox, NULL, NULL);

	is_int(0, apply(host, a2, snap, NULL, NULL, &rep), "changed archive applies");
	expect_item(&rep, "new.txt", "added", NULL);
	expect_item(&rep, "newdir", "added", NULL);
	expect_item(&rep, "newdir/deep/x.txt", "added", NULL);
	expect_item(&rep, "suid.txt", "added", NULL);
	expect_item(&rep, "ro", "added", NULL);
	expect_item(&rep, "dir/b.txt", "changed", NULL);
	expect_item(&rep, "link", "changed", NULL);
	expect_item(&rep, "mode.txt", "changed", NULL);
	expect_item(&rep, "type.txt", "changed", NULL);
	expect_item(&rep, "type.txt/in", "added", NULL);
	expect_item(&rep, "gone.txt", "deleted", NULL);
	expect_item(&rep, "gonedir/inner.txt", "deleted", NULL);
	expect_item(&rep, "gonedir", "deleted", NULL);
	is_int(0,
	       (long long)(rep.counts[WS_CONFLICT] + rep.counts[WS_REFUSED] +
			   rep.counts[WS_SKIPPED]),
	       "no conflict, refusal or skip");
	if (rep.counts[WS_SKIPPED] || rep.counts[WS_REFUSED])
		dump_report("changed archive", &rep);
	ws_report_done(&rep);

	{
		_cleanup_free_ char *b = read_text(host, "dir/b.txt"),
				    *n = read_text(host, "new.txt"),
				    *x = read_text(host, "newdir/deep/x.txt");
		char target[64] = "";
		_cleanup_free_ char *l = path_of(host, "link");

		is_str("B2", b, "dir/b.txt has the sandbox's content");
		is_str("N", n, "new.txt created");
		is_str("X", x, "newdir/deep/x.txt created");
		ok(readlink(l, target, sizeof(target) - 1) > 0 && streq(target, "dir/b.txt"),
		   "link retargeted (%s)", target);
	}
	is_int(0640, mode_of(host, "new.txt"), "new.txt mode 0640");
	is_int(0755, mode_of(host, "suid.txt"), "suid.txt: 0755 as the sandbox's archive said");
	is_int(0755, mode_of(host, "mode.txt"), "mode.txt mode changed to 0755");
	is_int(0750, mode_of(host, "newdir"), "newdir mode 0750");
	is_int(0555, mode_of(host, "ro"), "read-only directory mode applied last");
	ok(!exists(host, "gone.txt") && !exists(host, "gonedir"), "deletions applied");
	{
		_cleanup_free_ char *t = path_of(host, "type.txt");
		struct stat st;

		ok(lstat(t, &st) == 0 && S_ISDIR(st.st_mode) && exists(host, "type.txt/in"),
		   "type.txt became a directory with its entry");
	}
	ok(exists(host, "fifo"), "the FIFO still there");
	if (unlink(fifo) < 0)
		bail("unlink: %m");
	{
		_cleanup_free_ char *suid = path_of(sandbox, "suid.txt");
		_cleanup_free_ char *want = NULL, *got = NULL;

		if (chmod(suid, 0755) < 0) /* what the host is expected to have */
			bail("chmod: %m");
		want = tree_listing(sandbox);
		got = tree_listing(host);

		is_str(want, got, "the host tree equals the sandbox's");
	}
	{
		_cleanup_free_ char *ro = path_of(host, "ro");

		(void)chmod(ro, 0755);
	}
}

static void test_conflicts(void)
{
	_cleanup_free_ char *host = new_dir("host2"), *sandbox = new_dir("sandbox2");
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_close_ int a0 = -1, a = -1;
	struct ws_report rep;

	put_file(host, "f.txt", "1", 0644);
	put_file(host, "g.txt", "1", 0644);
	put_file(host, "h.txt", "1", 0644);
	put_file(host, "k.txt", "1", 0644);
	a0 = archive_of(host, &snap, NULL);

	/* The host edits f, g, h and creates both.txt while the sandbox works. */
	put_file(host, "f.txt", "host-f", 0644);
	put_file(host, "g.txt", "host-g", 0644);
	put_file(host, "h.txt", "host-h", 0644);
	put_file(host, "both.txt", "host-both", 0644);
	{
		_cleanup_free_ char *k = path_of(host, "k.txt");

		if (unlink(k) < 0)
			bail("unlink: %m");
	}

	put_file(sandbox, "f.txt", "sandbox-f", 0644); /* both changed f */
	put_file(sandbox, "h.txt", "1", 0644);	       /* the sandbox left h alone */
	put_file(sandbox, "both.txt", "sandbox-both", 0644);
	put_file(sandbox, "k.txt", "sandbox-k", 0644); /* host deleted k, sandbox changed it */
	/* g deleted in the sandbox, changed on the host */
	a = archive_of(sandbox, NULL, NULL);

	is_int(0, apply(host, a, snap, NULL, NULL, &rep), "conflicting archive applies");
	expect_item(&rep, "f.txt", "conflict", "changed on the host and in the sandbox");
	expect_item(&rep, "g.txt", "conflict", "changed on the host, deleted in the sandbox");
	expect_item(&rep, "both.txt", "conflict", "created on the host and in the sandbox");
	expect_item(&rep, "k.txt", "conflict", "deleted on the host");
	ok(item_action(&rep, "h.txt", NULL) == NULL, "h.txt, untouched by the sandbox: no item");
	is_int(4, (long long)rep.counts[WS_CONFLICT], "four conflicts");
	ws_report_done(&rep);
	{
		_cleanup_free_ char *f = read_text(host, "f.txt"), *g = read_text(host, "g.txt"),
				    *h = read_text(host, "h.txt"), *b = read_text(host, "both.txt");

		is_str("host-f", f, "f.txt: host version kept");
		is_str("host-g", g, "g.txt: host version kept, not deleted");
		is_str("host-h", h, "h.txt: host edit kept");
		is_str("host-both", b, "both.txt: host version kept");
		ok(!exists(host, "k.txt"), "k.txt stays deleted");
	}
}

/* A raw header block for a type the writer does not write. */
static void raw_entry(int fd, char typeflag, const char *path, const char *link)
{
	_cleanup_free_ struct tar_entry *e = calloc(1, sizeof(*e));
	uint8_t block[TAR_BLOCK_SIZE];

	if (!e)
		bail("out of memory");
	e->type = TAR_REGULAR;
	(void)snprintf(e->path, sizeof(e->path), "%s", path);
	e->mode = 0644;
	if (tar_format_header(e, block) < 0)
		bail("tar_format_header");
	block[156] = (uint8_t)typeflag;
	if (link)
		memcpy(block + 157, link, strlen(link));
	tar_header_fix_checksum(block);
	if (loop_write(fd, block, sizeof(block)) < 0)
		bail("write: %m");
}

static void add(struct tar_writer *w, enum tar_type type, const char *path, const char *data,
		uint32_t mode)
{
	_cleanup_free_ struct tar_entry *e = calloc(1, sizeof(*e));

	if (!e)
		bail("out of memory");
	e->type = type;
	(void)snprintf(e->path, sizeof(e->path), "%s", path);
	e->mode = mode;
	if (type == TAR_SYMLINK)
		(void)snprintf(e->link, sizeof(e->link), "%s", data);
	else if (type == TAR_REGULAR)
		e->size = strlen(data);
	if (tar_writer_header(w, e) < 0 ||
	    (type == TAR_REGULAR && tar_writer_data(w, data, strlen(data)) < 0) ||
	    tar_writer_end_entry(w) < 0)
		bail("writing %s: %m", path);
}

static bool refuse_git_config(const char *relpath, const char **reason, void *userdata)
{
	(*(unsigned *)userdata)++;
	if (streq(relpath, ".git/config") || startswith(relpath, ".git/hooks")) {
		*reason = "read-only in this sandbox";
		return false;
	}
	return true;
}

static void test_refusals(void)
{
	_cleanup_free_ char *host = new_dir("host3"), *outside = new_dir("outside");
	_cleanup_free_ char *abs_target = NULL, *before_outside = NULL, *after_outside = NULL;
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_close_ int a0 = -1, fd = memfd();
	struct ws_report rep;
	struct tar_writer w;
	unsigned calls = 0;
	struct ws_rules rules = { .may_write = refuse_git_config, .userdata = &calls };
	struct ws_limits lim = WS_LIMITS_DEFAULT;

	put_file(host, ".git/config", "[core]\n", 0644);
	put_file(host, ".git/hooks/pre-commit", "#!/bin/sh\n", 0755);
	put_file(host, "big.txt", "small", 0644);
	put_symlink(host, "hostlink", outside);
	a0 = archive_of(host, &snap, NULL);
	before_outside = tree_listing(outside);
	abs_target = strdup_printf("/tmp/cordon-ws-abs-%d", (int)getpid());
	if (!abs_target)
		bail("out of memory");

	tar_writer_init(&w, fd);
	add(&w, TAR_REGULAR, "../escaped", "x", 0644);
	add(&w, TAR_REGULAR, "dir/../../escaped2", "x", 0644);
	add(&w, TAR_REGULAR, abs_target, "x", 0644);
	add(&w, TAR_SYMLINK, "link", outside, 0777);
	add(&w, TAR_REGULAR, "link/evil", "x", 0644);
	add(&w, TAR_REGULAR, "hostlink/evil2", "x", 0644);
	add(&w, TAR_REGULAR, "file", "f", 0644);
	add(&w, TAR_REGULAR, "file/below", "x", 0644);
	add(&w, TAR_REGULAR, ".git/config", "[core]\n\thooksPath = /tmp\n", 0644);
	add(&w, TAR_REGULAR, "ok.txt", "fine", 0644);
	add(&w, TAR_REGULAR, "./dot/./slash//ok2.txt", "fine", 0644);
	add(&w, TAR_REGULAR, "ok.txt", "again", 0644);
	add(&w, TAR_REGULAR, "suid.txt", "s", 06755);
	add(&w, TAR_DIRECTORY, "sticky", "", 01777);
	raw_entry(fd, '1', "hard", "ok.txt");
	raw_entry(fd, '6', "fifo", NULL);
	add(&w, TAR_REGULAR, "big.txt", "0123456789abcdef", 0644);
	if (tar_writer_finish(&w) < 0 || lseek(fd, 0, SEEK_SET) != 0)
		bail("finish: %m");
	/* .git/hooks/pre-commit is absent from the archive: a deletion the rules refuse. */

	lim.max_bytes = 20; /* 18 bytes fit before big.txt; its 16 do not */
	is_int(0, apply(host, fd, snap, &lim, &rules, &rep), "hostile archive applies (refusals)");
	expect_item(&rep, "../escaped", "refused", "..");
	expect_item(&rep, "dir/../../escaped2", "refused", "..");
	expect_item(&rep, abs_target, "refused", "absolute path");
	expect_item(&rep, "link", "added", NULL);
	expect_item(&rep, "link/evil", "refused", "below a symlink in the archive");
	expect_item(&rep, "hostlink/evil2", "refused", "below a symlink on the host");
	expect_item(&rep, "file/below", "refused", "below a non-directory in the archive");
	expect_item(&rep, ".git/config", "refused", "read-only in this sandbox");
	expect_item(&rep, ".git/hooks/pre-commit", "refused", "read-only in this sandbox");
	expect_item(&rep, "big.txt", "refused", "size limit");
	expect_item(&rep, "hard", "refused", "hard link");
	expect_item(&rep, "fifo", "refused", "FIFO");
	expect_item(&rep, "ok.txt", "refused", "duplicate entry");
	expect_item(&rep, "dot/slash/ok2.txt", "added", NULL);
	expect_item(&rep, "suid.txt", "added", NULL);
	is_int(0755, mode_of(host, "suid.txt"), "setuid and setgid bits dropped (06755 -> 0755)");
	is_int(0777, mode_of(host, "sticky"), "sticky bit dropped (01777 -> 0777)");
	ok(calls > 0, "the rules callback was asked (%u times)", calls);
	ws_report_done(&rep);

	{
		_cleanup_free_ char *cfg = read_text(host, ".git/config"),
				    *ok1 = read_text(host, "ok.txt"),
				    *big = read_text(host, "big.txt"),
				    *esc = path_of(tmp, "escaped"),
				    *esc2 = path_of(tmp, "escaped2");

		is_str("[core]\n", cfg, ".git/config unchanged");
		ok(exists(host, ".git/hooks/pre-commit"), "pre-commit not deleted");
		is_str("small", big, "big.txt unchanged");
		is_str("fine", ok1, "ok.txt: the first of two entries written");
		ok(access(esc, F_OK) < 0 && access(esc2, F_OK) < 0,
		   "nothing created above the workspace");
		ok(access(abs_target, F_OK) < 0, "nothing created at the absolute path");
		ok(!exists(host, "hard") && !exists(host, "fifo"), "no hard link, no FIFO created");
		ok(!exists(host, "file/below"), "nothing below the file");
	}
	after_outside = tree_listing(outside);
	is_str(before_outside, after_outside, "nothing created through either symlink");
	ok(!exists(outside, "evil") && !exists(outside, "evil2"), "no evil, no evil2 outside");
}

static void test_truncated(void)
{
	_cleanup_free_ char *host = new_dir("host4"), *sandbox = new_dir("sandbox4");
	_cleanup_free_ char *before = NULL, *data = NULL;
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_close_ int a0 = -1, a = -1;
	size_t len;
	struct ws_report rep;

	make_base(host);
	a0 = archive_of(host, &snap, NULL);
	make_base(sandbox);
	put_file(sandbox, "dir/b.txt", "B-changed", 0644);
	put_file(sandbox, "zzz-new.txt", "new", 0644);
	{
		_cleanup_free_ char *p = path_of(sandbox, "gone.txt");

		if (unlink(p) < 0)
			bail("unlink: %m");
	}
	a = archive_of(sandbox, NULL, NULL);
	if (read_full_fd(a, 1 << 20, &data, &len) < 0)
		bail("read: %m");
	before = tree_listing(host);

	/* Cut points: inside the end marker, at its start, inside file data, inside a header;
	 * then a corrupt header, and junk after the end marker. */
	for (size_t cut = 0; cut < 6; cut++) {
		static const size_t back[] = { 1, 2 * TAR_BLOCK_SIZE, 3 * TAR_BLOCK_SIZE + 100,
					       4 * TAR_BLOCK_SIZE + 7 };
		_cleanup_close_ int fd = memfd();
		_cleanup_free_ char *after = NULL;
		size_t n = cut < 4 ? len - back[cut] : len;
		int r;

		if (loop_write(fd, data, n) < 0)
			bail("write: %m");
		if (cut == 4) {
			/* Whole, but a header near the end corrupted. */
			uint8_t x = 'X';

			if (pwrite(fd, &x, 1, (off_t)(len - 4 * TAR_BLOCK_SIZE + 257)) != 1)
				bail("pwrite: %m");
		}
		if (cut == 5 && loop_write(fd, "junk", 4) < 0) /* whole, then junk */
			bail("write: %m");
		if (lseek(fd, 0, SEEK_SET) != 0)
			bail("lseek: %m");
		r = apply(host, fd, snap, NULL, NULL, &rep);
		is_int(-EBADMSG, r, "archive %zu (cut %zu bytes from the end): -EBADMSG", cut,
		       cut < 4 ? back[cut] : 0);
		ok(rep.error[0] != '\0', "report says why: %s", rep.error);
		is_int(0, (long long)json_array_size(rep.items), "no report items");
		after = tree_listing(host);
		is_str(before, after, "archive %zu: the tree is unchanged, no temporaries", cut);
		ws_report_done(&rep);
	}
	if (lseek(a, 0, SEEK_SET) != 0)
		bail("lseek: %m");
	is_int(0, apply(host, a, snap, NULL, NULL, &rep), "the whole archive then applies");
	expect_item(&rep, "zzz-new.txt", "added", NULL);
	expect_item(&rep, "gone.txt", "deleted", NULL);
	ws_report_done(&rep);
}

static void test_apply_limits(void)
{
	_cleanup_free_ char *host = new_dir("host6"), *sandbox = new_dir("sandbox6");
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_close_ int a0 = -1, a = -1;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_report rep;

	put_file(host, "keep.txt", "k", 0644);
	a0 = archive_of(host, &snap, NULL);
	put_file(sandbox, "n1.txt", "1", 0644);
	put_file(sandbox, "n2.txt", "2", 0644);
	put_file(sandbox, "n3.txt", "3", 0644);
	a = archive_of(sandbox, NULL, NULL);

	lim.max_entries = 2;
	is_int(0, apply(host, a, snap, &lim, NULL, &rep), "archive over the entry limit applies");
	expect_item(&rep, "n1.txt", "added", NULL);
	expect_item(&rep, "n2.txt", "added", NULL);
	expect_item(&rep, "n3.txt", "refused", "beyond the entry limit");
	expect_item(&rep, "", "skipped", "deletions not applied");
	ok(exists(host, "keep.txt"), "keep.txt (absent from the archive) not deleted");
	ok(!exists(host, "n3.txt"), "n3.txt not written");
	ws_report_done(&rep);

	/* The names budget: "n1.txt" + NUL + NUL is 8 bytes. */
	lim = WS_LIMITS_DEFAULT;
	lim.max_names = 8;
	if (lseek(a, 0, SEEK_SET) != 0)
		bail("lseek: %m");
	is_int(0, apply(host, a, snap, &lim, NULL, &rep), "archive over the names limit applies");
	expect_item(&rep, "n2.txt", "refused", "beyond the entry limit");
	ok(exists(host, "keep.txt"), "keep.txt still not deleted");
	ws_report_done(&rep);
}

static void test_write_limits(void)
{
	_cleanup_free_ char *host = new_dir("host5");
	_cleanup_close_ int dfd = -1;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_snapshot *snap = NULL;
	struct ws_report rep;
	int p[2];

	make_base(host);
	dfd = open_dir(host);
	if (ws_report_init(&rep) < 0)
		bail("out of memory");

	lim.max_entries = 3;
	{
		_cleanup_close_ int fd = memfd();

		is_int(-E2BIG, ws_archive_write(dfd, fd, &lim, &snap, &rep), "too many entries");
		ok(snap == NULL && rep.error[0], "no snapshot; error: %s", rep.error);
	}
	lim = WS_LIMITS_DEFAULT;
	lim.max_bytes = 3;
	{
		_cleanup_close_ int fd = memfd();

		is_int(-EFBIG, ws_archive_write(dfd, fd, &lim, &snap, &rep), "too many bytes");
	}
	lim = WS_LIMITS_DEFAULT;
	lim.max_path = 8;
	{
		_cleanup_close_ int fd = memfd();

		is_int(0, ws_archive_write(dfd, fd, &lim, &snap, &rep), "long paths skipped");
		expect_item(&rep, "dir/sub/c.txt", "skipped", "path too long");
		ws_snapshot_free(snap);
		snap = NULL;
	}

	/* The reader went away: -EPIPE, and the process (SIGPIPE at its default) lives on. */
	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	safe_close(p[0]);
	lim = WS_LIMITS_DEFAULT;
	is_int(-EPIPE, ws_archive_write(dfd, p[1], &lim, &snap, &rep), "closed pipe: -EPIPE");
	safe_close(p[1]);
	{
		sigset_t pending;

		ok(sigpending(&pending) == 0 && !sigismember(&pending, SIGPIPE),
		   "no SIGPIPE left pending");
	}
	ws_report_done(&rep);
}

int main(void)
{
	char tmpl[] = "/tmp/test-ws-XXXXXX";

	plan_lazy();
	umask(022);
	tmp = mkdtemp(tmpl);
	if (!tmp)
		bail("mkdtemp: %m");

	test_round_trip_and_changes();
	test_conflicts();
	test_refusals();
	test_truncated();
	test_apply_limits();
	test_write_limits();

	if (tap_rm_rf(tmp) < 0)
		diag("could not remove %s", tmp);
	return tap_exit_status();
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* builtin:vm's guest helpers, fetched and verified: see vm-helpers.h. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "backends/vm/vm-helpers-pins.h"
#include "backends/vm/vm-helpers.h"
#include "common/cleanup.h"
#include "common/util.h"

/* VM_HELPER_PINS: a { NAME, SHA256, SIZE } initializer a helper, then the zero entry. */
const struct vm_helper_pin vm_helper_pins[] = { VM_HELPER_PINS };

const struct vm_helper_pin *vm_helper_pin(const char *name)
{
	for (const struct vm_helper_pin *p = vm_helper_pins; p->name; p++)
		if (streq(p->name, name))
			return p;
	return NULL;
}

static bool sodium_ok;

static void global_init(void)
{
	(void)curl_global_init(CURL_GLOBAL_DEFAULT);
	sodium_ok = sodium_init() >= 0;
}

static bool init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void)pthread_once(&once, global_init);
	return sodium_ok;
}

static void to_hex(const unsigned char d[crypto_hash_sha256_BYTES], char hex[65])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < crypto_hash_sha256_BYTES; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

static int digest_fd(int fd, char hex[65], uint64_t *ret_size)
{
	crypto_hash_sha256_state st;
	unsigned char buf[65536], d[crypto_hash_sha256_BYTES];
	uint64_t size = 0;
	ssize_t n;

	crypto_hash_sha256_init(&st);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		crypto_hash_sha256_update(&st, buf, (unsigned long long)n);
		size += (uint64_t)n;
	}
	crypto_hash_sha256_final(&st, d);
	to_hex(d, hex);
	*ret_size = size;
	return 0;
}

int vm_helpers_digest_at(int dirfd, const char *name, char hex[65], uint64_t *ret_size)
{
	_cleanup_(closep) int fd = -1;
	struct stat st;

	if (!init())
		return -EIO;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADMSG;
	return digest_fd(fd, hex, ret_size);
}

/* mkdir -p, 0755 (the helpers are programs, not secrets). */
static int mkdir_parents(const char *path)
{
	_cleanup_(freep) char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;

		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = c;
		if (!c)
			return 0;
	}
}

/* Under the lock, a temporary file is a dead fetcher's: remove it. */
static void remove_stale(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		safe_close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] == '.' && endswith(de->d_name, ".tmp") && de->d_type == DT_REG)
			(void)unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}

struct fetch {
	const struct vm_helper_pin *pin;
	const struct vm_helpers_opts *o;
	int fd;
	crypto_hash_sha256_state st;
	uint64_t got;
	bool too_big, exact;
	int write_errno;
};

static size_t on_data(char *buf, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;
	size_t len = size * n, off = 0;

	if (f->got + len > f->pin->size) {
		f->too_big = true;
		return 0;
	}
	crypto_hash_sha256_update(&f->st, (const unsigned char *)buf, len);
	while (off < len) {
		ssize_t w = write(f->fd, buf + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			f->write_errno = errno;
			return 0;
		}
		off += (size_t)w;
	}
	f->got += len;
	return len;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct fetch *f = ud;

	(void)dlnow, (void)ultotal, (void)ulnow;
	if (f->o->progress)
		f->o->progress(f->pin->name, VM_HELPER_PROGRESS, f->got,
			       f->exact	     ? f->pin->size
			       : dltotal > 0 ? (uint64_t)dltotal
					     : 0,
			       f->o->userdata);
	return 0;
}

static void unlink_tmp(int dirfd, char *tmp)
{
	if (*tmp)
		(void)unlinkat(dirfd, tmp, 0);
	*tmp = '\0';
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_UNSUPPORTED_PROTOCOL:
		return -EPROTONOSUPPORT;
	case CURLE_FILE_COULDNT_READ_FILE:
	case CURLE_HTTP_RETURNED_ERROR:
		return -ENOENT;
	default:
		return -EIO;
	}
}

/* Download pin's helper from url into dirfd (a temporary file renamed into place once verified). */
/* Download url into dirfd as pin->name (a temporary file renamed into place once verified):
 * exactly pin->size bytes when exact, else at most that many, with pin->sha256. */
static int fetch_file(const struct vm_helpers_opts *o, const struct vm_helper_pin *pin, bool exact,
		      mode_t mode, const char *scheme, const char *url, int dirfd, char *err,
		      size_t err_size)
{
	const char *what = exact ? "helper " : "";
	struct fetch f = { .pin = pin, .o = o, .fd = -1, .exact = exact };
	char tmp[256] = "", curl_err[CURL_ERROR_SIZE] = "", hex[65];
	unsigned char d[crypto_hash_sha256_BYTES];
	CURL *c;
	CURLcode cc;
	long status = 0;
	int r = 0;

	for (int i = 0; i < 100 && f.fd < 0; i++) {
		unsigned v;

		randombytes_buf(&v, sizeof(v));
		(void)snprintf(tmp, sizeof(tmp), ".%s.%08x.tmp", pin->name, v);
		f.fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			      0600);
		if (f.fd < 0 && errno != EEXIST) {
			r = -errno;
			(void)snprintf(err, err_size, "%s%s: cannot create a file in %s: %s", what,
				       pin->name, o->dir, strerror(errno));
			return r;
		}
	}
	if (f.fd < 0)
		return -EEXIST;
	crypto_hash_sha256_init(&f.st);
	c = curl_easy_init();
	if (!c) {
		unlink_tmp(dirfd, tmp);
		safe_close(f.fd);
		return -ENOMEM;
	}
	(void)curl_easy_setopt(c, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
	(void)curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
	/* A redirect stays in the base URL's scheme. */
	(void)curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, scheme);
#else
	(void)curl_easy_setopt(c, CURLOPT_PROTOCOLS,
			       (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS | CURLPROTO_FILE));
	(void)curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS,
			       streq(scheme, "https") ? (long)CURLPROTO_HTTPS
						      : (long)CURLPROTO_HTTP);
#endif
	(void)curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	(void)curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	(void)curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	(void)curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(c, CURLOPT_USERAGENT, "cordon-vm-helpers/" PACKAGE_VERSION);
	(void)curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			       o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 15000L);
	(void)curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			       o->total_timeout_ms > 0 ? o->total_timeout_ms : 600000L);
	(void)curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	(void)curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME,
			       o->low_speed_timeout_s > 0 ? o->low_speed_timeout_s : 30L);
	(void)curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)pin->size);
	(void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	(void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
	(void)curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	(void)curl_easy_setopt(c, CURLOPT_XFERINFODATA, &f);
	(void)curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	(void)curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
	if (o->progress)
		o->progress(pin->name, VM_HELPER_FETCHING, 0, exact ? pin->size : 0, o->userdata);
	cc = curl_easy_perform(c);
	(void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	crypto_hash_sha256_final(&f.st, d);
	to_hex(d, hex);

	if (f.write_errno) {
		r = -f.write_errno;
		(void)snprintf(err, err_size, "%s%s: writing to %s: %s", what, pin->name, o->dir,
			       strerror(f.write_errno));
	} else if (f.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
		r = -EBADMSG;
		(void)snprintf(err, err_size,
			       "%s%s from %s is larger than %s (sha256 %s, %llu bytes): refused",
			       what, pin->name, url, exact ? "its pin" : "the limit", pin->sha256,
			       (unsigned long long)pin->size);
	} else if (cc != CURLE_OK) {
		r = curl_errno(cc);
		if (cc == CURLE_HTTP_RETURNED_ERROR)
			(void)snprintf(err, err_size, "%s%s: %s: HTTP status %ld", what, pin->name,
				       url, status);
		else if (cc == CURLE_UNSUPPORTED_PROTOCOL) /* the base's scheme was checked */
			(void)snprintf(err, err_size,
				       "%s%s: %s: redirected to another scheme: refused (%s)", what,
				       pin->name, url, curl_err);
		else
			(void)snprintf(err, err_size, "%s%s: %s: %s", what, pin->name, url,
				       *curl_err ? curl_err : curl_easy_strerror(cc));
	} else if ((exact && f.got != pin->size) || !streq(hex, pin->sha256)) {
		r = -EBADMSG;
		if (exact)
			(void)snprintf(err, err_size,
				       "helper %s from %s does not match its pin: sha256 %s (%llu "
				       "bytes), pinned %s (%llu bytes): refused",
				       pin->name, url, hex, (unsigned long long)f.got, pin->sha256,
				       (unsigned long long)pin->size);
		else
			(void)snprintf(
				err, err_size,
				"%s from %s does not match: sha256 %s (%llu bytes), expected "
				"%s: refused",
				pin->name, url, hex, (unsigned long long)f.got, pin->sha256);
	} else if (fchmod(f.fd, mode) < 0 || fsync(f.fd) < 0) {
		r = -errno;
		(void)snprintf(err, err_size, "%s%s: %s: %s", what, pin->name, o->dir,
			       strerror(errno));
	} else if (renameat(dirfd, tmp, dirfd, pin->name) < 0) {
		r = -errno;
		(void)snprintf(err, err_size, "%s%s: cannot rename into %s: %s", what, pin->name,
			       o->dir, strerror(errno));
	} else {
		*tmp = '\0';
		(void)fsync(dirfd);
	}
	safe_close(f.fd);
	unlink_tmp(dirfd, tmp);
	if (r == 0 && o->progress)
		o->progress(pin->name, VM_HELPER_FETCHED, f.got, pin->size, o->userdata);
	return r;
}

static int fetch_one(const struct vm_helpers_opts *o, const struct vm_helper_pin *pin,
		     const char *scheme, const char *url, int dirfd, char *err, size_t err_size)
{
	return fetch_file(o, pin, true, 0755, scheme, url, dirfd, err, err_size);
}

static bool url_scheme(const char *url, char scheme[8])
{
	if (startswith(url, "https://"))
		strcpy(scheme, "https");
	else if (startswith(url, "http://"))
		strcpy(scheme, "http");
	else if (startswith(url, "file://"))
		strcpy(scheme, "file");
	else
		return false;
	return true;
}

int vm_helpers_ensure(const struct vm_helpers_opts *o, const char *const *names, char *err,
		      size_t err_size)
{
	const char *base = isempty(o->base_url) ? VM_HELPERS_BASE_URL : o->base_url;
	_cleanup_(closep) int dirfd = -1;
	char scheme[8];
	size_t n = 0;
	int r;

	(void)snprintf(err, err_size, "%s", "");
	if (!init()) {
		(void)snprintf(err, err_size, "libsodium cannot be initialized");
		return -EIO;
	}
	if (!url_scheme(base, scheme)) {
		(void)snprintf(err, err_size,
			       "the helpers' base URL \"%s\" is not https://, http:// or file://",
			       base);
		return -EPROTONOSUPPORT;
	}
	if (names)
		for (; names[n]; n++)
			if (!vm_helper_pin(names[n])) {
				(void)snprintf(err, err_size, "no helper named \"%s\" is pinned",
					       names[n]);
				return -ENOENT;
			}

	r = mkdir_parents(o->dir);
	if (r < 0) {
		(void)snprintf(err, err_size, "cannot create %s: %s", o->dir, strerror(-r));
		return r;
	}
	dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = -errno;
		(void)snprintf(err, err_size, "cannot open %s: %s", o->dir, strerror(errno));
		return r;
	}
	while (flock(dirfd, LOCK_EX) < 0)
		if (errno != EINTR) {
			r = -errno;
			(void)snprintf(err, err_size, "cannot lock %s: %s", o->dir,
				       strerror(errno));
			return r;
		}

	remove_stale(dirfd);
	for (size_t i = 0; names ? i < n : vm_helper_pins[i].name != NULL; i++) {
		const struct vm_helper_pin *pin = names ? vm_helper_pin(names[i])
							: &vm_helper_pins[i];
		_cleanup_(freep) char *url = NULL;
		char hex[65];
		uint64_t size;

		r = vm_helpers_digest_at(dirfd, pin->name, hex, &size);
		if (r == 0 && size == pin->size && streq(hex, pin->sha256)) {
			/* Ours, verified: make sure it runs (a copy may have lost its mode). */
			if (fchmodat(dirfd, pin->name, 0755, 0) < 0) {
				r = -errno;
				(void)snprintf(err, err_size, "helper %s in %s: %s", pin->name,
					       o->dir, strerror(errno));
				return r;
			}
			if (o->progress)
				o->progress(pin->name, VM_HELPER_REUSED, size, size, o->userdata);
			continue;
		}
		if (o->offline) {
			if (r == -ENOENT)
				(void)snprintf(err, err_size, "helper %s is not in %s", pin->name,
					       o->dir);
			else if (r < 0)
				(void)snprintf(err, err_size, "helper %s in %s: %s", pin->name,
					       o->dir, strerror(-r));
			else
				(void)snprintf(err, err_size,
					       "helper %s in %s does not match its pin: sha256 %s "
					       "(%llu bytes), pinned %s (%llu bytes): refused",
					       pin->name, o->dir, hex, (unsigned long long)size,
					       pin->sha256, (unsigned long long)pin->size);
			return r < 0 ? r : -EBADMSG;
		}
		url = strdup_printf("%s%s%s", base, endswith(base, "/") ? "" : "/", pin->name);
		if (!url)
			return -ENOMEM;
		r = fetch_one(o, pin, scheme, url, dirfd, err, err_size);
		if (r < 0) {
			/* What was there did not match: nothing unverified stays. */
			(void)unlinkat(dirfd, pin->name, 0);
			return r;
		}
	}
	return 0;
}

int vm_helpers_download(const struct vm_helpers_opts *o, const char *url, const char *name,
			const char *sha256, uint64_t max_size, char *err, size_t err_size)
{
	struct vm_helper_pin pin = { .name = name, .sha256 = sha256, .size = max_size };
	_cleanup_(closep) int dirfd = -1;
	char scheme[8];
	int r;

	(void)snprintf(err, err_size, "%s", "");
	if (!init()) {
		(void)snprintf(err, err_size, "libsodium cannot be initialized");
		return -EIO;
	}
	if (!url_scheme(url, scheme)) {
		(void)snprintf(err, err_size, "the URL \"%s\" is not https://, http:// or file://",
			       url);
		return -EPROTONOSUPPORT;
	}
	if (strlen(sha256) != 64 || sha256[strspn(sha256, "0123456789abcdef")] != '\0') {
		(void)snprintf(err, err_size, "\"%s\" is not a sha256 (64 lowercase hex digits)",
			       sha256);
		return -EINVAL;
	}
	if (!*name || strchr(name, '/') || name[0] == '.') {
		(void)snprintf(err, err_size, "\"%s\" is not a file name", name);
		return -EINVAL;
	}
	r = mkdir_parents(o->dir);
	if (r < 0) {
		(void)snprintf(err, err_size, "cannot create %s: %s", o->dir, strerror(-r));
		return r;
	}
	dirfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = -errno;
		(void)snprintf(err, err_size, "cannot open %s: %s", o->dir, strerror(errno));
		return r;
	}
	return fetch_file(o, &pin, false, 0644, scheme, url, dirfd, err, err_size);
}

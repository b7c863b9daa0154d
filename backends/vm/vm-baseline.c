/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm baselines (setting baselineEnabled). The first VM of a configuration boots cold;
 * at its agent's hello, before the host sends INIT (wall clock, entropy, workspace mount: none
 * of them is in the saved state) and before any command, its keeper stops the guest, migrates
 * it over QMP into a file of the cache directory, hashes the file, fsyncs and renames it into
 * place, writes the manifest last, and continues the guest. Later VMs of the same
 * configuration start QEMU with -S -incoming fd:5, a pipe that the keeper fills from the
 * artifact while hashing it; the guest is continued only if the digest matches the manifest's
 * (and -S keeps a tampered stream from starting itself). INIT then gives the restored guest
 * its own clock and entropy (reseeding its CRNG, which it would otherwise share with every
 * other clone) and mounts the workspace (9p blocks migration while mounted, so the device is in
 * the baseline, unmounted).
 *
 * The cache key is the sha256 of the manifest's identity without its epoch: QEMU's binary
 * digest and version, the microvm firmware's digest, the kernel's and initramfs' digests, the
 * full QEMU command line (the workspace's host path left out), accelerator, memory and owner.
 * A manifest that does not match, another epoch (baselineEpoch), an artifact of another size,
 * owner or digest, or a failed restore: the baseline is deleted, a backend-baseline-invalid
 * event says why, and the VM boots cold once (and saves a fresh one). An artifact in use by a
 * restore is flock()ed shared; eviction (least recently used first, beyond
 * baselineMaxInactiveArtifacts or baselineMaxBytes) skips it. The directory is 0700 and owned
 * by the controller's user; what it holds is the guest's memory before anything of a user's
 * reached it.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/vm/vm-baseline.h"
#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#define MANIFEST_MAX (1 << 20)
#define FIRMWARE "/usr/share/qemu/bios-microvm.bin"

uint64_t vmb_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[b[i] >> 4];
		out[2 * i + 1] = x[b[i] & 15];
	}
	out[2 * n] = 0;
}

static int from_hex(const char *s, uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int v = 0;

		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= c - '0';
			else if (c >= 'a' && c <= 'f')
				v |= c - 'a' + 10;
			else
				return -EINVAL;
		}
		b[i] = (uint8_t)v;
	}
	return s[2 * n] ? -EINVAL : 0;
}

/*
 * SHA-256, with the x86 SHA extensions where the CPU has them (about 10x libsodium's portable
 * code: the artifact is hashed on every restore, on its critical path), else libsodium's.
 * Chosen (and checked against libsodium) by sha_choose(), before any keeper forks.
 */
struct sha {
	crypto_hash_sha256_state so;
	uint32_t h[8];
	uint8_t buf[64];
	size_t n;
	uint64_t total;
};

static int sha_ni = -1; /* -1: not chosen yet */

#if defined(__x86_64__)
static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

__attribute__((target("sha,sse4.1,ssse3"))) static void sha_ni_blocks(uint32_t st[8],
								      const uint8_t *p, size_t n)
{
	const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i s0, s1, tmp, msg, w[4], abef, cdgh;

	tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xB1);
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1B);
	s0 = _mm_alignr_epi8(tmp, s1, 8);
	s1 = _mm_blend_epi16(s1, tmp, 0xF0);
	for (; n; n--, p += 64) {
		abef = s0;
		cdgh = s1;
		for (int i = 0; i < 4; i++)
			w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)),
						mask);
		for (int i = 0; i < 16; i++) {
			msg = _mm_add_epi32(w[i % 4],
					    _mm_loadu_si128((const __m128i *)&sha_k[4 * i]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
			if (i >= 3 && i < 15) {
				tmp = _mm_alignr_epi8(w[i % 4], w[(i + 3) % 4], 4);
				w[(i + 1) % 4] = _mm_add_epi32(w[(i + 1) % 4], tmp);
				w[(i + 1) % 4] = _mm_sha256msg2_epu32(w[(i + 1) % 4], w[i % 4]);
			}
			msg = _mm_shuffle_epi32(msg, 0x0E);
			s0 = _mm_sha256rnds2_epu32(s0, s1, msg);
			if (i >= 1 && i < 13)
				w[(i + 3) % 4] = _mm_sha256msg1_epu32(w[(i + 3) % 4], w[i % 4]);
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1B);
	s1 = _mm_shuffle_epi32(s1, 0xB1);
	s0 = _mm_blend_epi16(tmp, s1, 0xF0);
	s1 = _mm_alignr_epi8(s1, tmp, 8);
	_mm_storeu_si128((__m128i *)&st[0], s0);
	_mm_storeu_si128((__m128i *)&st[4], s1);
}
#endif

static void sha_init(struct sha *c)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	if (sha_ni != 1) {
		crypto_hash_sha256_init(&c->so);
		return;
	}
	memcpy(c->h, iv, sizeof(iv));
	c->n = 0;
	c->total = 0;
}

static void sha_update(struct sha *c, const uint8_t *p, size_t len)
{
#if defined(__x86_64__)
	if (sha_ni == 1) {
		c->total += len;
		if (c->n) {
			size_t t = 64 - c->n < len ? 64 - c->n : len;

			memcpy(c->buf + c->n, p, t);
			c->n += t;
			p += t;
			len -= t;
			if (c->n < 64)
				return;
			sha_ni_blocks(c->h, c->buf, 1);
			c->n = 0;
		}
		if (len >= 64) {
			sha_ni_blocks(c->h, p, len / 64);
			p += len / 64 * 64;
			len %= 64;
		}
		memcpy(c->buf, p, len);
		c->n = len;
		return;
	}
#endif
	crypto_hash_sha256_update(&c->so, p, (unsigned long long)len);
}

static void sha_final(struct sha *c, uint8_t out[32])
{
#if defined(__x86_64__)
	if (sha_ni == 1) {
		uint64_t bits = c->total * 8;
		uint8_t pad[72] = { 0x80 };
		size_t n = (c->n < 56 ? 56 : 120) - c->n;

		for (int i = 0; i < 8; i++)
			pad[n + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
		sha_update(c, pad, n + 8);
		for (int i = 0; i < 8; i++) {
			out[4 * i] = (uint8_t)(c->h[i] >> 24);
			out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
			out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
			out[4 * i + 3] = (uint8_t)c->h[i];
		}
		return;
	}
#endif
	crypto_hash_sha256_final(&c->so, out);
}

/* The SHA extensions if the CPU has them and they agree with libsodium. */
static void sha_choose(void)
{
	if (sha_ni >= 0)
		return;
	sha_ni = 0;
#if defined(__x86_64__)
	{
		unsigned a, b, c, d;
		uint8_t buf[1000], x[32], y[32];
		struct sha s;

		if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1U << 19)) || !(c & (1U << 9)) ||
		    !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1U << 29)))
			return;
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)(i * 131 + 7);
		for (size_t len = 0; len <= sizeof(buf); len += 37) {
			sha_ni = 1;
			sha_init(&s);
			sha_update(&s, buf, len / 3);
			sha_update(&s, buf + len / 3, len - len / 3);
			sha_final(&s, x);
			sha_ni = 0;
			crypto_hash_sha256(y, buf, len);
			if (memcmp(x, y, 32) != 0) {
				log_warning(
					"vm baselines: the SHA extensions disagree with libsodium: "
					"not used");
				return;
			}
		}
		sha_ni = 1;
	}
#endif
}

/* --- the controller's side --- */

int vmb_configure(json_t *settings, const char *home, uid_t owner, struct vmb_config **ret,
		  const char **error)
{
	json_t *en = json_object_get(settings, "baselineEnabled");
	json_t *cnt = json_object_get(settings, "baselineMaxInactiveArtifacts");
	json_t *bytes = json_object_get(settings, "baselineMaxBytes");
	json_t *epoch = json_object_get(settings, "baselineEpoch");
	const char *dir = json_string_value(json_object_get(settings, "baselineDir"));
	struct vmb_config *c;

	*ret = NULL;
	if (!json_is_true(en))
		return 0;
	if ((cnt && (!json_is_number(cnt) || json_number_value(cnt) < 1)) ||
	    (bytes && (!json_is_number(bytes) || json_number_value(bytes) < 1)) ||
	    (epoch && (!json_is_number(epoch) || json_number_value(epoch) < 0))) {
		*error = "baselineMaxInactiveArtifacts and baselineMaxBytes must be positive, "
			 "baselineEpoch not negative";
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max_count = cnt ? (unsigned)json_number_value(cnt) : 4;
	c->max_bytes = bytes ? (uint64_t)json_number_value(bytes) : UINT64_C(1) << 30;
	c->epoch = epoch ? (uint64_t)json_number_value(epoch) : 0;
	c->owner = owner;
	if (dir && *dir)
		c->dir = strdup(dir);
	else {
		const char *cache = getenv("XDG_CACHE_HOME");

		if (cache && *cache)
			c->dir = strdup_printf("%s/cordon/vm/baselines", cache);
		else
			c->dir = strdup_printf("%s/.cache/cordon/vm/baselines", home ? home : "/");
	}
	if (!c->dir) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void vmb_config_free(struct vmb_config *c)
{
	if (!c)
		return;
	free(c->dir);
	free(c);
}

void vmb_job_free(struct vmb_job *j)
{
	if (!j)
		return;
	safe_close(j->dir_fd);
	safe_close(j->artifact_fd);
	free(j->identity);
	strv_free(j->restore_argv);
	free(j);
}

/* path's sha256 into d, unless d already holds it for this very file. */
static int digest_file(const char *path, struct vmb_digest *d)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ uint8_t *buf = NULL;
	struct sha st;
	uint8_t h[32];
	struct stat s;

	if (fd < 0 || fstat(fd, &s) < 0)
		return -errno;
	if (d->hex[0] && d->dev == s.st_dev && d->ino == s.st_ino && d->size == s.st_size &&
	    d->mtime_ns == (long long)s.st_mtim.tv_sec * 1000000000LL + s.st_mtim.tv_nsec)
		return 0;
	buf = malloc(1 << 20);
	if (!buf)
		return -ENOMEM;
	sha_init(&st);
	for (;;) {
		ssize_t n = read(fd, buf, 1 << 20);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		sha_update(&st, buf, (size_t)n);
	}
	sha_final(&st, h);
	to_hex(h, sizeof(h), d->hex);
	d->dev = s.st_dev;
	d->ino = s.st_ino;
	d->size = s.st_size;
	d->mtime_ns = (long long)s.st_mtim.tv_sec * 1000000000LL + s.st_mtim.tv_nsec;
	return 0;
}

static void qemu_version(const char *qemu, char *out, size_t size)
{
	_cleanup_free_ char *cmd = NULL;
	FILE *f;

	out[0] = 0;
	if (strchr(qemu, '\''))
		return;
	cmd = strdup_printf("'%s' --version 2>/dev/null", qemu);
	f = cmd ? popen(cmd, "re") : NULL;
	if (!f)
		return;
	if (!fgets(out, (int)size, f))
		out[0] = 0;
	out[strcspn(out, "\n")] = 0;
	(void)pclose(f);
}

/* The argv as the manifest binds it: the workspace's host path (which may change from one VM to
 * the next: it is attached after the restore) left out, and the value of tsc_early_khz (the
 * host's TSC frequency: read from a stable source where the host has one, vm.c, but calibrated
 * anew by every prepare, and so a little different each time, where it has none; a restored
 * guest keeps the value it booted with, on the same host). */
static json_t *argv_identity(char *const *argv)
{
	json_t *a = json_array();

	for (size_t i = 0; a && argv[i]; i++) {
		const char *v = argv[i], *p;
		_cleanup_free_ char *s = NULL;

		if (i > 0 && streq(argv[i - 1], "-fsdev") && (p = strstr(v, ",path="))) {
			const char *e = p + 6;

			while (*e && !(*e == ',' && e[1] != ',')) {
				if (*e == ',')
					e++;
				e++;
			}
			s = strdup_printf("%.*s,path=*%s", (int)(p - v), v, e);
			if (!s) {
				json_decref(a);
				return NULL;
			}
			v = s;
		} else if (i > 0 && streq(argv[i - 1], "-append") &&
			   (p = strstr(v, "tsc_early_khz="))) {
			const char *e = p + 14;

			while (*e >= '0' && *e <= '9')
				e++;
			s = strdup_printf("%.*stsc_early_khz=host%s", (int)(p - v), v, e);
			if (!s) {
				json_decref(a);
				return NULL;
			}
			v = s;
		}
		if (json_array_append_new(a, json_string(v)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static int open_dir(struct vmb_config *c)
{
	_cleanup_close_ int fd = -1;
	struct stat s;
	int r;

	r = mkdir_p(c->dir, 0700);
	if (r < 0)
		return r;
	fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &s) < 0)
		return -errno;
	if (s.st_uid != geteuid())
		return -EPERM;
	if ((s.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* Remove a baseline by key: the manifest first, the artifact unless a restore holds it. */
static void discard(int dir, const char *key)
{
	char m[80], a[80];
	_cleanup_close_ int fd = -1;

	(void)snprintf(m, sizeof(m), "%s.json", key);
	(void)snprintf(a, sizeof(a), "%s.vmstate", key);
	(void)unlinkat(dir, m, 0);
	fd = openat(dir, a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
		return;
	(void)unlinkat(dir, a, 0);
}

/* Check the candidate KEY.json/KEY.vmstate against identity: 0 (j set up to restore), -ENOENT
 * (none), or another error with reason set (refused). */
static int check_candidate(struct vmb_config *c, struct vmb_job *j, json_t *identity, char *reason,
			   size_t reason_size)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ json_t *m = NULL;
	_cleanup_close_ int mfd = -1, afd = -1;
	json_t *art, *id;
	const char *hex;
	char name[80];
	struct stat s;
	size_t len;
	int r;

	(void)snprintf(name, sizeof(name), "%s.json", j->key);
	mfd = openat(j->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (mfd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	if (fstat(mfd, &s) < 0 || !S_ISREG(s.st_mode) || s.st_uid != c->owner) {
		(void)snprintf(reason, reason_size, "the manifest is not a file of the owner's");
		return -EPERM;
	}
	r = read_full_fd(mfd, MANIFEST_MAX, &text, &len);
	if (r >= 0)
		m = json_loadb(text, len, 0, NULL);
	art = json_object_get(m, "artifact");
	id = json_object_get(m, "identity");
	hex = json_string_value(json_object_get(art, "sha256"));
	if (!m || !id || !hex || strlen(hex) != 64 || from_hex(hex, j->want, 32) < 0 ||
	    !json_is_integer(json_object_get(art, "bytes"))) {
		(void)snprintf(reason, reason_size, "the manifest is invalid");
		return -EINVAL;
	}
	j->want_bytes = (uint64_t)json_integer_value(json_object_get(art, "bytes"));
	if (!json_equal(id, identity)) {
		_cleanup_json_ json_t *a = json_deep_copy(id), *b = json_deep_copy(identity);

		if (a && b) {
			json_object_del(a, "epoch");
			json_object_del(b, "epoch");
		}
		(void)snprintf(reason, reason_size, "%s",
			       a && b && json_equal(a, b)
				       ? "the baseline epoch changed"
				       : "the manifest does not match this configuration");
		return -ESTALE;
	}
	(void)snprintf(name, sizeof(name), "%s.vmstate", j->key);
	afd = openat(j->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (afd < 0) {
		(void)snprintf(reason, reason_size, "the artifact is missing");
		return -ENODATA;
	}
	if (fstat(afd, &s) < 0 || !S_ISREG(s.st_mode) || s.st_uid != c->owner ||
	    (uint64_t)s.st_size != j->want_bytes) {
		(void)snprintf(reason, reason_size,
			       "the artifact's size or owner does not match the manifest");
		return -EINVAL;
	}
	if (flock(afd, LOCK_SH | LOCK_NB) < 0) {
		(void)snprintf(reason, reason_size, "the artifact is being replaced");
		return -EBUSY;
	}
	/* Most recently used: the manifest's mtime. */
	(void)futimens(mfd, NULL);
	j->artifact_fd = TAKE_FD(afd);
	j->restore = true;
	return 0;
}

int vmb_plan(struct vmb_config *c, const char *qemu, const char *kernel, const char *initrd,
	     char *const *argv, const char *accel, unsigned memory_mib, struct vmb_job **ret,
	     char *reason, size_t reason_size)
{
	_cleanup_json_ json_t *identity = NULL, *keyed = NULL;
	_cleanup_free_ char *ktext = NULL;
	struct vmb_job *j;
	uint8_t h[32];
	size_t n;
	int r;

	*ret = NULL;
	reason[0] = 0;
	sha_choose();
	if (digest_file(qemu, &c->qemu) < 0 || digest_file(kernel, &c->kernel) < 0 ||
	    digest_file(initrd, &c->initrd) < 0) {
		log_warning("vm baselines: cannot hash QEMU, the kernel or the initramfs: off");
		return -EIO;
	}
	if (access(FIRMWARE, R_OK) == 0)
		(void)digest_file(FIRMWARE, &c->firmware);
	if (!c->qemu_version[0])
		qemu_version(qemu, c->qemu_version, sizeof(c->qemu_version));
	identity = json_pack("{s:i,s:{s:s,s:s},s:s,s:s,s:s,s:o,s:s,s:i,s:I,s:i,s:s}", "format", 1,
			     "qemu", "sha256", c->qemu.hex, "version", c->qemu_version, "firmware",
			     c->firmware.hex, "kernel", c->kernel.hex, "initrd", c->initrd.hex,
			     "argv", argv_identity(argv), "accelerator", accel, "memoryMiB",
			     (int)memory_mib, "epoch", (json_int_t)c->epoch, "owner", (int)c->owner,
			     "migration", "fd");
	keyed = identity ? json_deep_copy(identity) : NULL;
	if (!keyed)
		return -ENOMEM;
	json_object_del(keyed, "epoch");
	ktext = json_dumps(keyed, JSON_COMPACT | JSON_SORT_KEYS);
	j = calloc(1, sizeof(*j));
	if (!ktext || !j) {
		free(j);
		return -ENOMEM;
	}
	j->artifact_fd = -1;
	j->identity = json_dumps(identity, JSON_COMPACT | JSON_SORT_KEYS);
	crypto_hash_sha256(h, (const uint8_t *)ktext, strlen(ktext));
	to_hex(h, sizeof(h), j->key);
	j->dir_fd = open_dir(c);
	if (!j->identity || j->dir_fd < 0) {
		r = j->identity ? j->dir_fd : -ENOMEM;
		log_warning("vm baselines: cannot use %s: %s", c->dir, strerror(-r));
		vmb_job_free(j);
		return r;
	}
	r = check_candidate(c, j, identity, reason, reason_size);
	if (r == -EBUSY) {
		/* Being replaced: this VM boots cold and leaves it alone. */
		vmb_job_free(j);
		return 0;
	}
	if (r < 0 && r != -ENOENT) {
		if (!reason[0])
			(void)snprintf(reason, reason_size, "%s", strerror(-r));
		discard(j->dir_fd, j->key);
	}
	if (j->restore) {
		n = strv_length(argv);
		j->restore_argv = calloc(n + 4, sizeof(char *));
		if (!j->restore_argv) {
			vmb_job_free(j);
			return -ENOMEM;
		}
		for (size_t i = 0; i < n; i++)
			if (!(j->restore_argv[i] = strdup(argv[i]))) {
				vmb_job_free(j);
				return -ENOMEM;
			}
		j->restore_argv[n] = strdup("-S");
		j->restore_argv[n + 1] = strdup("-incoming");
		j->restore_argv[n + 2] = strdup("fd:5");
		if (!j->restore_argv[n] || !j->restore_argv[n + 1] || !j->restore_argv[n + 2]) {
			vmb_job_free(j);
			return -ENOMEM;
		}
	}
	*ret = j;
	return 0;
}

struct lru {
	char key[65];
	long long mtime;
	uint64_t bytes;
};

static int lru_cmp(const void *a, const void *b)
{
	const struct lru *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

void vmb_evict(struct vmb_config *c)
{
	_cleanup_close_ int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_free_ struct lru *e = NULL;
	size_t n = 0, cap = 0, count;
	uint64_t total = 0;
	DIR *d;
	struct dirent *de;

	bool no_save;

	if (dfd < 0)
		return;
	/* A keeper saves holding the directory's flock: when nobody does, every ".tmp-*" is what
	 * a save killed midway (its keeper, or the controller and so the keeper) left. */
	no_save = flock(dfd, LOCK_EX | LOCK_NB) == 0;
	d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
	if (!d) {
		if (no_save)
			(void)flock(dfd, LOCK_UN);
		return;
	}
	while ((de = readdir(d))) {
		struct stat ms, as;
		char a[80];
		size_t l = strlen(de->d_name);

		if (no_save && startswith(de->d_name, ".tmp-")) {
			if (unlinkat(dfd, de->d_name, 0) == 0)
				log_info(
					"vm baselines: removed %s, left by a save that did not end",
					de->d_name);
			continue;
		}
		if (l != 64 + 5 || !endswith(de->d_name, ".json"))
			continue;
		if (fstatat(dfd, de->d_name, &ms, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		(void)snprintf(a, sizeof(a), "%.64s.vmstate", de->d_name);
		if (fstatat(dfd, a, &as, AT_SYMLINK_NOFOLLOW) < 0)
			as.st_size = 0;
		if (n == cap) {
			struct lru *ne = realloc(e, (cap = cap ? cap * 2 : 16) * sizeof(*e));

			if (!ne)
				break;
			e = ne;
		}
		(void)snprintf(e[n].key, sizeof(e[n].key), "%.64s", de->d_name);
		e[n].mtime = (long long)ms.st_mtim.tv_sec * 1000000000LL + ms.st_mtim.tv_nsec;
		e[n].bytes = (uint64_t)as.st_size;
		total += e[n].bytes;
		n++;
	}
	closedir(d);
	if (no_save)
		(void)flock(dfd, LOCK_UN);
	if (!n)
		return;
	qsort(e, n, sizeof(*e), lru_cmp);
	count = n;
	for (size_t i = 0; i < n && (count > c->max_count || total > c->max_bytes); i++) {
		char a[80];
		_cleanup_close_ int fd = -1;

		(void)snprintf(a, sizeof(a), "%s.vmstate", e[i].key);
		fd = openat(dfd, a, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue; /* in use by a restore */
		(void)snprintf(a, sizeof(a), "%s.json", e[i].key);
		(void)unlinkat(dfd, a, 0);
		(void)snprintf(a, sizeof(a), "%s.vmstate", e[i].key);
		(void)unlinkat(dfd, a, 0);
		log_info("vm baselines: evicted %s (%llu bytes)", e[i].key,
			 (unsigned long long)e[i].bytes);
		count--;
		total -= e[i].bytes;
	}
}

/* --- the keeper's side: system calls only, static buffers --- */

static char qbuf[65536];
static size_t qlen;
static uint8_t iobuf[1 << 20];

static void why_set(char *why, size_t size, const char *a, const char *b)
{
	size_t n = 0;

	for (; a && *a && n + 1 < size; a++)
		why[n++] = *a;
	for (; b && *b && n + 1 < size; b++)
		why[n++] = *b;
	why[n] = 0;
}

/* Write all of p to the non-blocking fd by the deadline: 0, or -1. */
static int w_deadline(int fd, const uint8_t *p, size_t n, uint64_t deadline)
{
	while (n > 0) {
		uint64_t now = vmb_mono_ms();
		ssize_t k;

		if (now >= deadline || poll(&(struct pollfd){ .fd = fd, .events = POLLOUT }, 1,
					    (int)(deadline - now)) <= 0)
			return -1;
		k = write(fd, p, n);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Send a QMP command (with fd attached if >= 0) tagged "id":"<id>", and wait for its answer's
 * line (in qbuf, NUL-ended, returned through *line): 0, -1 (error answer), -2 (no answer). */
static int qmp(int fd, const char *cmd, const char *id, int pass_fd, uint64_t deadline,
	       const char **line)
{
	char tag[32];
	size_t tl = 0;

	if (cmd) {
		union {
			struct cmsghdr c;
			char b[CMSG_SPACE(sizeof(int))];
		} cm;
		struct iovec iov = { .iov_base = (void *)cmd, .iov_len = strlen(cmd) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t k;

		memset(&cm, 0, sizeof(cm));
		if (pass_fd >= 0) {
			mh.msg_control = &cm;
			mh.msg_controllen = CMSG_SPACE(sizeof(int));
			cm.c.cmsg_level = SOL_SOCKET;
			cm.c.cmsg_type = SCM_RIGHTS;
			cm.c.cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(&cm.c), &pass_fd, sizeof(int));
		}
		do
			k = sendmsg(fd, &mh, MSG_NOSIGNAL);
		while (k < 0 && errno == EINTR);
		if (k != (ssize_t)iov.iov_len)
			return -2;
	}
	/* "id": "<id>" as QEMU prints it, or the greeting's "QMP" when id is NULL. */
	for (const char *s = id ? "\"" : "\"QMP\""; *s; s++)
		tag[tl++] = *s;
	for (const char *s = id ? id : ""; *s && tl < sizeof(tag) - 2; s++)
		tag[tl++] = *s;
	if (id)
		tag[tl++] = '"';
	tag[tl] = 0;
	for (;;) {
		char *nl;

		while ((nl = memchr(qbuf, '\n', qlen))) {
			size_t l = (size_t)(nl - qbuf) + 1;

			*nl = 0;
			if (strstr(qbuf, tag)) {
				static char out[sizeof(qbuf)];
				int r = strstr(qbuf, "\"error\"") ? -1 : 0;

				memcpy(out, qbuf, l);
				memmove(qbuf, qbuf + l, qlen - l);
				qlen -= l;
				if (line)
					*line = out;
				return r;
			}
			memmove(qbuf, qbuf + l, qlen - l);
			qlen -= l;
		}
		if (qlen == sizeof(qbuf))
			qlen = 0; /* (a line this long is no answer of ours) */
		{
			uint64_t now = vmb_mono_ms();
			ssize_t k;

			if (now >= deadline || poll(&(struct pollfd){ .fd = fd, .events = POLLIN },
						    1, (int)(deadline - now)) <= 0)
				return -2;
			k = read(fd, qbuf + qlen, sizeof(qbuf) - qlen);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				return -2;
			qlen += (size_t)k;
		}
	}
}

static int qmp_start(int fd, uint64_t deadline)
{
	qlen = 0;
	if (qmp(fd, NULL, NULL, -1, deadline, NULL) < 0)
		return -1;
	return qmp(fd, "{\"execute\":\"qmp_capabilities\",\"id\":\"c0\"}\n", "c0", -1, deadline,
		   NULL);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* name = prefix + key + suffix (static, short). */
static void name3(char *out, size_t size, const char *a, const char *b, const char *c)
{
	size_t n = 0;

	for (const char *s = a; *s && n + 1 < size; s++)
		out[n++] = *s;
	for (const char *s = b; *s && n + 1 < size; s++)
		out[n++] = *s;
	for (const char *s = c; *s && n + 1 < size; s++)
		out[n++] = *s;
	out[n] = 0;
}

static size_t u64_dec(uint64_t v, char *out)
{
	char t[24];
	size_t n = 0, k = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		out[k++] = t[--n];
	out[k] = 0;
	return k;
}

void vmb_keeper_discard(const struct vmb_job *j)
{
	char name[80];

	name3(name, sizeof(name), "", j->key, ".json");
	(void)unlinkat(j->dir_fd, name, 0);
	name3(name, sizeof(name), "", j->key, ".vmstate");
	(void)unlinkat(j->dir_fd, name, 0);
}

/* Hash fd from its start: 0, or -1. */
static int hash_fd(int fd, uint8_t h[32], uint64_t *bytes)
{
	struct sha st;

	*bytes = 0;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	sha_init(&st);
	for (;;) {
		ssize_t n = read(fd, iobuf, sizeof(iobuf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		sha_update(&st, iobuf, (size_t)n);
		*bytes += (uint64_t)n;
	}
	sha_final(&st, h);
	return 0;
}

int vmb_keeper_save(const struct vmb_job *j, int q, uint64_t deadline, uint64_t *bytes, char *why,
		    size_t why_size)
{
	char pid[24], tmp[128], tmpm[128], name[80], hex[65], num[24];
	const char *line = NULL, *err = NULL;
	int fd = -1, mfd = -1, r = -1;
	uint8_t h[32];
	bool stopped = false;

	*bytes = 0;
	(void)u64_dec((uint64_t)getpid(), pid);
	name3(tmp, sizeof(tmp), ".tmp-", j->key, "");
	name3(tmpm, sizeof(tmpm), tmp, "-", pid);
	name3(tmp, sizeof(tmp), tmpm, ".vmstate", "");
	name3(tmpm, sizeof(tmpm), tmpm, ".json", "");
	/* One save at a time in the directory: never two artifacts renamed over each other with
	 * their manifests crossed. */
	if (flock(j->dir_fd, LOCK_EX | LOCK_NB) < 0) {
		why_set(why, why_size, "another VM is saving a baseline", NULL);
		return -1;
	}
	if (qmp_start(q, deadline) < 0) {
		err = "no QMP greeting";
		goto out;
	}
	if (qmp(q, "{\"execute\":\"stop\",\"id\":\"c1\"}\n", "c1", -1, deadline, NULL) < 0) {
		err = "QMP stop failed";
		goto out;
	}
	stopped = true;
	if (qmp(q,
		"{\"execute\":\"migrate-set-parameters\",\"arguments\":{\"max-bandwidth\":"
		"107374182400},\"id\":\"c2\"}\n",
		"c2", -1, deadline, NULL) < 0) {
		err = "QMP migrate-set-parameters failed";
		goto out;
	}
	fd = openat(j->dir_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
	if (fd < 0) {
		err = "cannot create the artifact";
		goto out;
	}
	if (qmp(q,
		"{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"cordon-baseline\"},"
		"\"id\":\"c3\"}\n",
		"c3", fd, deadline, NULL) < 0 ||
	    qmp(q,
		"{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:cordon-baseline\"},"
		"\"id\":\"c4\"}\n",
		"c4", -1, deadline, NULL) < 0) {
		err = "QMP migrate failed";
		goto out;
	}
	for (;;) {
		if (qmp(q, "{\"execute\":\"query-migrate\",\"id\":\"c5\"}\n", "c5", -1, deadline,
			&line) < 0) {
			err = "QMP query-migrate failed";
			goto out;
		}
		if (strstr(line, "\"completed\""))
			break;
		if (strstr(line, "\"failed\"") || strstr(line, "\"cancelled\"")) {
			err = "the migration failed";
			goto out;
		}
		sleep_ms(2);
	}
	if (hash_fd(fd, h, bytes) < 0 || fsync(fd) < 0) {
		err = "cannot read back the artifact";
		goto out;
	}
	to_hex(h, sizeof(h), hex);
	/* The old manifest goes first: never a manifest beside an artifact it does not name. */
	name3(name, sizeof(name), "", j->key, ".json");
	(void)unlinkat(j->dir_fd, name, 0);
	name3(name, sizeof(name), "", j->key, ".vmstate");
	if (renameat(j->dir_fd, tmp, j->dir_fd, name) < 0) {
		err = "cannot rename the artifact";
		goto out;
	}
	tmp[0] = 0;
	mfd = openat(j->dir_fd, tmpm, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0400);
	(void)u64_dec(*bytes, num);
	if (mfd < 0 || loop_write(mfd, "{\"artifact\":{\"sha256\":\"", 23) < 0 ||
	    loop_write(mfd, hex, 64) < 0 || loop_write(mfd, "\",\"bytes\":", 10) < 0 ||
	    loop_write(mfd, num, strlen(num)) < 0 || loop_write(mfd, "},\"identity\":", 13) < 0 ||
	    loop_write(mfd, j->identity, strlen(j->identity)) < 0 ||
	    loop_write(mfd, "}\n", 2) < 0 || fsync(mfd) < 0) {
		err = "cannot write the manifest";
		goto out;
	}
	name3(name, sizeof(name), "", j->key, ".json");
	if (renameat(j->dir_fd, tmpm, j->dir_fd, name) < 0) {
		err = "cannot rename the manifest";
		goto out;
	}
	tmpm[0] = 0;
	(void)fsync(j->dir_fd);
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (mfd >= 0)
		close(mfd);
	if (tmp[0])
		(void)unlinkat(j->dir_fd, tmp, 0);
	if (tmpm[0])
		(void)unlinkat(j->dir_fd, tmpm, 0);
	(void)flock(j->dir_fd, LOCK_UN);
	if (stopped &&
	    qmp(q, "{\"execute\":\"cont\",\"id\":\"c6\"}\n", "c6", -1, deadline, NULL) < 0) {
		why_set(why, why_size, err ? err : "",
			err ? "; QMP cont failed" : "QMP cont failed");
		return -2; /* the guest stays stopped: the VM is lost */
	}
	if (err)
		why_set(why, why_size, err, NULL);
	return r;
}

int vmb_keeper_restore(const struct vmb_job *j, int q, int pipe_w, uint64_t deadline, char *why,
		       size_t why_size)
{
	struct sha st;
	uint8_t h[32];
	uint64_t total = 0;
	const char *line = NULL;

	sha_init(&st);
	for (;;) {
		ssize_t n = read(j->artifact_fd, iobuf, sizeof(iobuf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(pipe_w);
			why_set(why, why_size, "cannot read the artifact", NULL);
			return -1;
		}
		if (n == 0)
			break;
		sha_update(&st, iobuf, (size_t)n);
		total += (uint64_t)n;
		if (w_deadline(pipe_w, iobuf, (size_t)n, deadline) < 0) {
			close(pipe_w);
			why_set(why, why_size, "QEMU stopped reading the artifact", NULL);
			return -1;
		}
	}
	close(pipe_w);
	sha_final(&st, h);
	if (total != j->want_bytes || sodium_memcmp(h, j->want, sizeof(h)) != 0) {
		why_set(why, why_size, "the artifact's digest does not match its manifest", NULL);
		return -1;
	}
	if (qmp_start(q, deadline) < 0) {
		why_set(why, why_size, "QEMU did not load the artifact (no QMP)", NULL);
		return -1;
	}
	for (;;) {
		if (qmp(q, "{\"execute\":\"query-status\",\"id\":\"r1\"}\n", "r1", -1, deadline,
			&line) < 0) {
			why_set(why, why_size, "QEMU did not load the artifact", NULL);
			return -1;
		}
		if (!strstr(line, "\"inmigrate\""))
			break;
		sleep_ms(1);
	}
	if (!strstr(line, "\"paused\"") && !strstr(line, "\"prelaunch\"")) {
		why_set(why, why_size, "unexpected state after the restore: ", line);
		return -1;
	}
	if (qmp(q, "{\"execute\":\"cont\",\"id\":\"r2\"}\n", "r2", -1, deadline, NULL) < 0) {
		why_set(why, why_size, "QMP cont failed", NULL);
		return -1;
	}
	return 0;
}

void vmb_descriptor_fields(json_t *desc)
{
	json_t *f = json_object_get(json_object_get(desc, "settings"), "fields");

	if (!json_is_array(f))
		return;
	(void)json_array_append_new(
		f, json_pack("{s:s,s:s,s:s,s:s,s:b}", "id", "baselineEnabled", "type", "boolean",
			     "label", "Snapshot baselines", "description",
			     "Save each configuration's VM right after boot (before any command) "
			     "and restore later VMs from it instead of booting them cold.",
			     "defaultValue", false));
	(void)json_array_append_new(
		f, json_pack("{s:s,s:s,s:s,s:s,s:i}", "id", "baselineMaxInactiveArtifacts", "type",
			     "number", "label", "Baselines kept", "description",
			     "The most baselines kept (least recently used evicted first).",
			     "defaultValue", 4));
	(void)json_array_append_new(
		f, json_pack("{s:s,s:s,s:s,s:s,s:I}", "id", "baselineMaxBytes", "type", "number",
			     "label", "Baseline bytes", "description",
			     "The most bytes the baselines take (least recently used evicted "
			     "first).",
			     "defaultValue", (json_int_t)1 << 30));
	(void)json_array_append_new(
		f, json_pack("{s:s,s:s,s:s,s:s,s:i}", "id", "baselineEpoch", "type", "number",
			     "label", "Baseline epoch", "description",
			     "Bound into every baseline: changing it invalidates them all.",
			     "defaultValue", 0));
	(void)json_array_append_new(
		f, json_pack("{s:s,s:s,s:s,s:s}", "id", "baselineDir", "type", "string", "label",
			     "Baseline directory", "description",
			     "Where baselines are kept (0700). Default: the cache directory's "
			     "cordon/vm/baselines."));
}

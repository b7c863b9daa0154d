/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <limits.h>

#include "common/util.h"
#include "tests/tap.h"

int main(void)
{
	unsigned u;
	uint64_t u64;
	int i;

	plan(38);

	is_str("bar", startswith("foobar", "foo"), "startswith returns the rest");
	ok(startswith("foobar", "bar") == NULL, "startswith refuses a non-prefix");
	ok(endswith("foo.json", ".json"), "endswith matches a suffix");
	ok(!endswith("json", ".json"), "endswith refuses a longer suffix");

	is_int(0, safe_atou("4096", &u), "safe_atou parses 4096");
	is_int(4096, u, "safe_atou value");
	is_int(-EINVAL, safe_atou("", &u), "safe_atou refuses empty");
	is_int(-EINVAL, safe_atou(" 1", &u), "safe_atou refuses leading blank");
	is_int(-EINVAL, safe_atou("1x", &u), "safe_atou refuses trailing junk");
	is_int(-EINVAL, safe_atou("-1", &u), "safe_atou refuses a sign");
	is_int(-EINVAL, safe_atou("010", &u), "safe_atou refuses leading zeros");
	is_int(-ERANGE, safe_atou("4294967296", &u), "safe_atou refuses UINT_MAX+1");
	is_int(0, safe_atou64("18446744073709551615", &u64), "safe_atou64 takes UINT64_MAX");
	is_int(-ERANGE, safe_atou64("18446744073709551616", &u64), "safe_atou64 overflow");
	is_int(0, safe_atoi("-2147483648", &i), "safe_atoi takes INT_MIN");
	is_int(INT_MIN, i, "safe_atoi INT_MIN value");
	is_int(-ERANGE, safe_atoi("2147483648", &i), "safe_atoi refuses INT_MAX+1");

	ok(path_is_normalized("/"), "/ is normalized");
	ok(path_is_normalized("/usr/lib"), "/usr/lib is normalized");
	ok(!path_is_normalized("usr"), "relative path refused");
	ok(!path_is_normalized("/usr/"), "trailing slash refused");
	ok(!path_is_normalized("/usr//lib"), "empty component refused");
	ok(!path_is_normalized("/usr/../etc"), "dot-dot refused");
	ok(!path_is_normalized("/usr/./lib"), "dot refused");
	ok(!path_is_normalized("/a\nb"), "control character refused");
	ok(path_is_normalized("/a/..b/c."), "names that merely start with dots are fine");

	ok(path_startswith("/home/u/.ssh", "/home/u"), "path below prefix");
	ok(path_startswith("/home/u", "/home/u"), "path equal to prefix");
	ok(!path_startswith("/home/user", "/home/u"), "prefix must end at a component");
	ok(path_startswith("/x", "/"), "everything is below /");

	{
		char a[] = "a", b[] = "b";
		char *v[] = { a, b, NULL };
		_cleanup_strv_free_ char **c = strv_copy(v);

		is_int(2, (long long)strv_length(c), "strv_copy keeps length");
		ok(strv_contains(c, "b"), "strv_contains finds b");
		ok(!strv_contains(c, "c"), "strv_contains misses c");
		ok(c[0] != v[0], "strv_copy copies strings");
	}
	{
		_cleanup_free_ char *s = strdup_printf("%s-%d", "sb", 7);

		is_str("sb-7", s, "strdup_printf formats");
	}
	ok(ascii_strcaseeq("Example.TEST", "example.test"), "ascii_strcaseeq ignores case");
	ok(!ascii_strcaseeq("example.test", "example.tes"), "ascii_strcaseeq length matters");
	{
		size_t r;

		ok(size_mul_overflow((size_t)-1, 2, &r), "size_mul_overflow detects overflow");
	}
	return tap_exit_status();
}

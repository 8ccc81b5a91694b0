/* SPDX-License-Identifier: MIT */
/*
 * The version macros match the project's version, and the shared library
 * (this test links libuvnet.so, not the static library) reports the same
 * release at run time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <uvnet/version.h>

static void test_macros(void **state)
{
	char s[32];

	(void)state;
	assert_string_equal(UVN_VERSION_STRING, UVN_PROJECT_VERSION);
	snprintf(s, sizeof(s), "%d.%d.%d", UVN_VERSION_MAJOR, UVN_VERSION_MINOR, UVN_VERSION_PATCH);
	assert_string_equal(s, UVN_VERSION_STRING);
	assert_int_equal(UVN_VERSION_NUMBER,
			 UVN_VERSION_MAJOR << 16 | UVN_VERSION_MINOR << 8 | UVN_VERSION_PATCH);
	/* Encoded versions order as releases do. */
	assert_true(UVN_VERSION_ENCODE(0, 1, 255) < UVN_VERSION_ENCODE(0, 2, 0));
	assert_true(UVN_VERSION_ENCODE(0, 255, 255) < UVN_VERSION_ENCODE(1, 0, 0));
#if UVN_VERSION_NUMBER < UVN_VERSION_ENCODE(0, 1, 0)
	fail_msg("UVN_VERSION_NUMBER unusable in #if");
#endif
}

static void test_runtime(void **state)
{
	(void)state;
	assert_string_equal(uvn_version(), UVN_VERSION_STRING);
	assert_int_equal(uvn_version_number(), UVN_VERSION_NUMBER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_macros),
		cmocka_unit_test(test_runtime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

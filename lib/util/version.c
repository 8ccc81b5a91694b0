/* SPDX-License-Identifier: MIT */
/*
 * The release this library was built as, for programs that want the one
 * they run with (the <uvnet/version.h> macros give the one they were
 * built against).
 */
#include <uvnet/version.h>

const char *uvn_version(void)
{
	return UVN_VERSION_STRING;
}

unsigned uvn_version_number(void)
{
	return UVN_VERSION_NUMBER;
}

/* SPDX-License-Identifier: MIT */
/*
 * JSON output. Every string that did not come from a constant in our own
 * code (port names, socket paths, interface names, error reasons) goes
 * through uvn_json_str(): a path may hold a quote, a backslash, a control
 * character or bytes that are not UTF-8, and the line must still parse.
 * One helper for every writer (uvnetd's stats and `ctl show --json`, the
 * ports' queue dumps, uvnet-perf), so they cannot drift apart.
 */
#ifndef UVN_UTIL_JSON_H
#define UVN_UTIL_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence at @s (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or 0. @s[0] >= 0x80. */
static inline size_t uvn_json_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* Write @s as a JSON string, quotes included (NULL: ""). '"' and '\\' are
 * escaped, control characters written as \u00XX, bytes that are not UTF-8
 * replaced by U+FFFD. */
static inline void uvn_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', f);
	while (*p) {
		size_t n;

		if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p++, f);
		} else if (*p < 0x20) {
			fprintf(f, "\\u%04x", *p++);
		} else if (*p < 0x80) {
			fputc(*p++, f);
		} else if ((n = uvn_json_utf8_len(p))) {
			fwrite(p, 1, n, f);
			p += n;
		} else {
			fputs("\\ufffd", f);
			p++;
		}
	}
	fputc('"', f);
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: uvn_json_str (lib/util/json.h), the one escaper every
 * JSON writer uses for strings a peer or a user chose (port names, socket
 * paths, interface names, error reasons). The input, up to its first NUL,
 * is the string; the output must be one valid JSON string (RFC 8259) that
 * decodes to the input with every byte that is not part of valid UTF-8
 * replaced by U+FFFD. FZ_REPEAT=1 checks that an input's output does not
 * depend on the inputs before it (fuzz_repeat.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_mem.h"
#include "fuzz_repeat.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned hex(unsigned char c)
{
	CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Decode the JSON string @j (quotes included) into @out as UTF-8. */
static size_t decode(const unsigned char *j, size_t n, unsigned char *out)
{
	size_t i = 1, o = 0;

	CHECK(n >= 2 && j[0] == '"' && j[n - 1] == '"');
	while (i < n - 1) {
		unsigned char c = j[i];

		CHECK(c >= 0x20 && c != '"');
		if (c != '\\') {
			out[o++] = c; /* UTF-8 validity is checked against the input below */
			i++;
			continue;
		}
		CHECK(i + 1 < n - 1);
		switch (j[i + 1]) {
		case '"': case '\\': case '/': out[o++] = j[i + 1]; i += 2; break;
		case 'b': out[o++] = '\b'; i += 2; break;
		case 'f': out[o++] = '\f'; i += 2; break;
		case 'n': out[o++] = '\n'; i += 2; break;
		case 'r': out[o++] = '\r'; i += 2; break;
		case 't': out[o++] = '\t'; i += 2; break;
		case 'u': {
			unsigned u;

			CHECK(i + 6 <= n - 1);
			u = hex(j[i + 2]) << 12 | hex(j[i + 3]) << 8 | hex(j[i + 4]) << 4 | hex(j[i + 5]);
			CHECK(u < 0xd800 || u > 0xdfff); /* we never write surrogates */
			if (u < 0x80) {
				out[o++] = (unsigned char)u;
			} else if (u < 0x800) {
				out[o++] = (unsigned char)(0xc0 | u >> 6);
				out[o++] = (unsigned char)(0x80 | (u & 0x3f));
			} else {
				out[o++] = (unsigned char)(0xe0 | u >> 12);
				out[o++] = (unsigned char)(0x80 | ((u >> 6) & 0x3f));
				out[o++] = (unsigned char)(0x80 | (u & 0x3f));
			}
			i += 6;
			break;
		}
		default:
			CHECK(!"bad escape");
		}
	}
	return o;
}

/* RFC 3629, written out independently of the code under test. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k;

		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			k = 2, cp = s[i] & 0x1f;
		else if ((s[i] & 0xf0) == 0xe0)
			k = 3, cp = s[i] & 0x0f;
		else if ((s[i] & 0xf8) == 0xf0)
			k = 4, cp = s[i] & 0x07;
		else
			return false;
		if (i + k > n)
			return false;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k;
	}
	return true;
}

/* What the input should decode to: valid UTF-8 kept, other bytes U+FFFD. */
static size_t expect(const unsigned char *s, unsigned char *out)
{
	size_t o = 0;

	while (*s) {
		size_t n = *s < 0x80 ? 1 : uvn_json_utf8_len(s);

		if (n) {
			memcpy(out + o, s, n);
			o += n;
			s += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			s++;
		}
	}
	return o;
}

/*
 * Kept from one input to the next (a malloc and free of each buffer, and a
 * new stream, per input were much of a short input's time). The string
 * ends at a guard page with everything before it poisoned (fz_area), so a
 * read past its NUL or before it is caught as a heap redzone would catch
 * it; the stream is rewound and its length taken from where the escaper
 * stopped; the decoded copies grow when an input needs more.
 */
#define IN_CAP (1u << 20)

static struct fz_area in_area;
static unsigned char *a, *b;
static size_t cap;
static FILE *f;
static char *js;
static size_t jn;

/* How an input ended, to compare two runs of it (FZ_REPEAT). */
struct outcome {
	uint64_t json_hash, len;
};

static void run_input(const uint8_t *data, size_t size, void *out)
{
	char *in = size < IN_CAP ? (char *)fz_area_get(&in_area, IN_CAP, size + 1, 1)
				 : malloc(size + 1);
	struct outcome *o = out;
	size_t an, bn;

	CHECK(in);
	if (size >= cap) {
		cap = 2 * size + 64;
		a = realloc(a, 3 * cap + 1);
		b = realloc(b, 3 * cap + 1);
		CHECK(a && b);
	}
	if (!f)
		f = open_memstream(&js, &jn);
	CHECK(f && !fseek(f, 0, SEEK_SET));
	memcpy(in, data, size);
	in[size] = 0;
	uvn_json_str(f, in);
	CHECK(!fflush(f));
	an = decode((const unsigned char *)js, jn, a);
	bn = expect((const unsigned char *)in, b);
	CHECK(utf8_ok(a, an));
	CHECK(an == bn && !memcmp(a, b, an));
	if (o) {
		o->json_hash = fz_hash(js, jn, FZ_HASH_SEED);
		o->len = jn;
	}
	if (size < IN_CAP)
		fz_area_put(&in_area);
	else
		free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome x, y;

	fz_run_checked(run_input, data, size, &x, &y, sizeof(x));
	return 0;
}

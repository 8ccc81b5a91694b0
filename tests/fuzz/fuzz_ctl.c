/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: uvnetd's control line (tools/uvnetd/ctl_parse.c), the
 * bytes a client sends cut into arbitrary pieces, through the gatherer and
 * the parser.
 *
 * Input: byte 0 is the line buffer's size (0: the daemon's, 256), byte 1
 * seeds the cuts, the rest is what the client sends before it closes its
 * end. The buffer and each piece are heap blocks of exactly their size,
 * so ASan sees any access past them.
 *
 * Checked against the protocol written out here: the line is the bytes
 * before the first '\n', handed over once, by the call that brings that
 * '\n'; a line with no room is refused by the call that brings its first
 * byte too many; at the end of the stream a partial line is the line and
 * no bytes at all are nothing; after that every call returns -EALREADY
 * and changes nothing. A parsed command is one of the grammar's: its
 * canonical text, rendered here (save [FILE] among them), is the line's words, and parses back to
 * the same command; a line whose words are a command's is never refused.
 * The fdb commands are checked by their fields and their canonical text
 * parsed back (check_fdb).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_mem.h"
#include "../../tools/uvnetd/ctl_parse.h"

#define DAEMON_LINE 256 /* UVNETD_CTL_LINE */
#define SEP " \t\r\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The grammar, independently of the parser's tables. */
static const char *const show_what[] = { "ports", "queues", "fdb", "stats" };
static const char *const zc_mode[] = { "off", "on", "auto" }; /* enum uvn_zc_mode */

static void render(const struct uvnetd_ctl_cmd *c, char *out, size_t n)
{
	if (c->op == UVNETD_CTL_SET_ZEROCOPY)
		snprintf(out, n, "set zerocopy %s", zc_mode[c->zerocopy]);
	else if (c->op == UVNETD_CTL_ADD_PORT)
		snprintf(out, n, "add-port %s%s%s", c->spec, c->name ? " name=" : "",
			 c->name ? c->name : "");
	else if (c->op == UVNETD_CTL_DEL_PORT)
		snprintf(out, n, "del-port %s", c->name);
	else if (c->op == UVNETD_CTL_SAVE)
		snprintf(out, n, "save%s%s", c->path ? " " : "", c->path ? c->path : "");
	else if (c->openmetrics)
		snprintf(out, n, "show %s --format openmetrics", show_what[c->op]);
	else
		snprintf(out, n, "show %s%s", show_what[c->op], c->json ? " --json" : "");
}

/* A word of the line: not empty, no separator in it. */
static bool word(const char *w)
{
	return w && *w && !w[strcspn(w, SEP)];
}

static bool valid(const struct uvnetd_ctl_cmd *c)
{
	if (c->error)
		return false;
	if (c->openmetrics)
		return c->op == UVNETD_CTL_SHOW_STATS && !c->json && !c->zerocopy && !c->spec &&
		       !c->name && !c->path;
	if (c->op == UVNETD_CTL_SAVE)
		return !c->json && !c->zerocopy && !c->spec && !c->name && (!c->path || word(c->path));
	if (c->path)
		return false;
	if (c->op == UVNETD_CTL_SET_ZEROCOPY)
		return !c->json && c->zerocopy >= 0 && c->zerocopy < 3 && !c->spec && !c->name;
	if (c->op == UVNETD_CTL_ADD_PORT)
		return !c->json && !c->zerocopy && word(c->spec) && (!c->name || word(c->name));
	if (c->op == UVNETD_CTL_DEL_PORT)
		return !c->json && !c->zerocopy && !c->spec && word(c->name);
	return c->op >= UVNETD_CTL_SHOW_PORTS && c->op <= UVNETD_CTL_SHOW_STATS && !c->zerocopy &&
	       !c->spec && !c->name;
}

/* Is @w (words joined by single spaces) an add-port, del-port or save line? */
static bool is_port_command(const char *w)
{
	const char *a = strchr(w, ' '), *b = a ? strchr(a + 1, ' ') : NULL;

	if (!strcmp(w, "save") || (!strncmp(w, "save ", 5) && !b))
		return true;
	if (!a || (b && strchr(b + 1, ' ')))
		return false;
	if (!strncmp(w, "del-port ", 9))
		return !b;
	return !strncmp(w, "add-port ", 9) && (!b || (!strncmp(b + 1, "name=", 5) && b[6]));
}

/* Is @w the text of a command? */
static bool is_command(const char *w)
{
	char text[64];

	if (is_port_command(w) || !strcmp(w, "show stats --format openmetrics"))
		return true;
	for (int op = 0; op <= UVNETD_CTL_SET_ZEROCOPY; op++) {
		for (int v = 0; v < 3; v++) {
			struct uvnetd_ctl_cmd c = { .op = (enum uvnetd_ctl_op)op };

			if (op == UVNETD_CTL_SET_ZEROCOPY)
				c.zerocopy = v;
			else if (v == 2)
				continue;
			else
				c.json = v;
			render(&c, text, sizeof(text));
			if (!strcmp(w, text))
				return true;
		}
	}
	return false;
}

/* The words of @s joined by single spaces. */
static void words(const char *s, char *out)
{
	size_t o = 0;

	while (*s) {
		size_t gap = strspn(s, SEP), w;

		s += gap;
		w = strcspn(s, SEP);
		if (!w)
			break;
		if (o)
			out[o++] = ' ';
		memcpy(out + o, s, w);
		o += w;
		s += w;
	}
	out[o] = 0;
}

/* The fdb commands (fdb show|add|del|flush): MACs in either case and
 * vlan= with leading zeros or 0 have no one text, so they are checked by
 * their fields and by parsing their canonical text back. */
static bool is_fdb(const struct uvnetd_ctl_cmd *c, const char *w)
{
	return c->op == UVNETD_CTL_FDB_ADD || c->op == UVNETD_CTL_FDB_DEL ||
	       c->op == UVNETD_CTL_FDB_FLUSH || (c->op == UVNETD_CTL_SHOW_FDB && !strncmp(w, "fdb ", 4));
}

static void check_fdb(const struct uvnetd_ctl_cmd *c)
{
	char text[DAEMON_LINE + 64];
	struct uvnetd_ctl_cmd again;

	CHECK(!c->error && !c->spec && !c->name && !c->path && !c->zerocopy && !c->openmetrics);
	CHECK(c->mac >> 48 == 0 && c->vlan <= 4094 && (!c->port || word(c->port)));
	if (c->op == UVNETD_CTL_SHOW_FDB)
		snprintf(text, sizeof(text), "fdb show%s", c->json ? " --json" : "");
	else if (c->op == UVNETD_CTL_FDB_FLUSH)
		snprintf(text, sizeof(text), "fdb flush%s%s", c->port ? " port=" : "",
			 c->port ? c->port : "");
	else
		snprintf(text, sizeof(text), "fdb %s %02x:%02x:%02x:%02x:%02x:%02x%s%s vlan=%u",
			 c->op == UVNETD_CTL_FDB_ADD ? "add" : "del", (unsigned)(c->mac >> 40) & 0xff,
			 (unsigned)(c->mac >> 32) & 0xff, (unsigned)(c->mac >> 24) & 0xff,
			 (unsigned)(c->mac >> 16) & 0xff, (unsigned)(c->mac >> 8) & 0xff,
			 (unsigned)c->mac & 0xff, c->port ? " port=" : "", c->port ? c->port : "",
			 c->vlan);
	CHECK(c->op != UVNETD_CTL_FDB_ADD || c->port);
	CHECK(c->op != UVNETD_CTL_FDB_DEL || !c->port);
	CHECK(uvnetd_ctl_parse(text, &again) == 0);
	CHECK(again.op == c->op && again.json == c->json && again.mac == c->mac &&
	      again.vlan == c->vlan && !again.port == !c->port &&
	      (!c->port || !strcmp(again.port, c->port)));
}

static void check_parse(const char *line, size_t len)
{
	char *l = malloc(len + 1), *w = malloc(len + 1), text[DAEMON_LINE + 16];
	struct uvnetd_ctl_cmd cmd, again;
	int r;

	CHECK(l && w);
	memcpy(l, line, len + 1);
	words(l, w);
	r = uvnetd_ctl_parse(l, &cmd);
	if (r) {
		CHECK(r == -EINVAL && cmd.error && *cmd.error);
		CHECK(!is_command(w));
		goto out;
	}
	if (is_fdb(&cmd, w)) {
		check_fdb(&cmd);
		goto out;
	}
	CHECK(valid(&cmd));
	render(&cmd, text, sizeof(text));
	CHECK(!strcmp(w, text));
	CHECK(uvnetd_ctl_parse(text, &again) == 0);
	CHECK(valid(&again) && again.op == cmd.op && again.json == cmd.json &&
	      again.zerocopy == cmd.zerocopy && again.openmetrics == cmd.openmetrics &&
	      !again.spec == !cmd.spec &&
	      (!cmd.spec || !strcmp(again.spec, cmd.spec)) && !again.name == !cmd.name &&
	      (!cmd.name || !strcmp(again.name, cmd.name)) && !again.path == !cmd.path &&
	      (!cmd.path || !strcmp(again.path, cmd.path)));
out:
	free(l);
	free(w);
}

/* Piece lengths: mostly short, some longer than the buffer. */
static size_t cut(uint32_t *rng)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 17;
	*rng ^= *rng << 5;
	return *rng % 8 ? *rng % 12 : (*rng >> 8) % 300;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t bufsz, n, line, at, off = 0;
	const char *s, *nl;
	uint32_t rng;
	unsigned len = 0;
	int want, got = 0, r, lines = 0;
	char *buf, *snap;

	if (size < 2)
		return 0;
	bufsz = data[0] ? data[0] : DAEMON_LINE;
	rng = 0x9e3779b9u ^ data[1];
	s = (const char *)data + 2;
	n = size - 2;

	/* What must come out, and which byte's arrival brings it. */
	nl = memchr(s, '\n', n);
	line = nl ? (size_t)(nl - s) : n;
	if (line > bufsz - 1)
		want = -E2BIG, at = bufsz - 1;
	else if (nl)
		want = UVNETD_CTL_READY, at = line;
	else
		want = n ? UVNETD_CTL_READY : -ENODATA, at = SIZE_MAX; /* at the end */

	buf = malloc(bufsz);
	snap = malloc(bufsz);
	CHECK(buf && snap);
	memset(buf, 0x55, bufsz);
	while (off < n) {
		size_t k = cut(&rng);
		char *piece;

		if (k > n - off)
			k = n - off;
		if (!k)
			continue; /* read() returning 0 is the end, below */
		piece = malloc(k);
		CHECK(piece);
		memcpy(piece, s + off, k);
		r = uvnetd_ctl_gather(buf, bufsz, &len, piece, k);
		free(piece);
		if (!got && at >= off && at < off + k) {
			CHECK(r == want);
			got = r;
			memcpy(snap, buf, bufsz);
		} else {
			CHECK(r == (got ? -EALREADY : UVNETD_CTL_MORE));
		}
		lines += r == UVNETD_CTL_READY;
		off += k;
	}
	r = uvnetd_ctl_gather_end(bufsz, &len);
	if (!got) {
		CHECK(r == want);
		got = r;
		memcpy(snap, buf, bufsz);
	} else {
		CHECK(r == -EALREADY);
	}
	lines += r == UVNETD_CTL_READY;
	CHECK(len == bufsz);
	CHECK(uvnetd_ctl_gather(buf, bufsz, &len, "\n", 1) == -EALREADY);
	CHECK(!memcmp(buf, snap, bufsz));

	CHECK(lines == (want == UVNETD_CTL_READY));
	if (want == UVNETD_CTL_READY) {
		CHECK(!memcmp(buf, s, line) && buf[line] == 0);
		check_parse(buf, line);
	}
	free(buf);
	free(snap);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * QMP client for a guest's receive filter (qmp.h). The conversation:
 * QEMU greets, we ask for capabilities mode, then query-rx-filter; after
 * each answer QEMU sends NIC_RX_FILTER_CHANGED once on the next change,
 * and we ask again. Messages are one JSON object per line. QEMU is a peer
 * like any other: a line too long, an answer that does not parse or lacks
 * a field costs the connection (counted), never more; meanwhile the
 * filter is open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/device/filter.h"
#include "port/qmp.h"
#include "util/json_read.h"
#include "util/log.h"
#include "util/loop.h"
#include "util/mac.h"
#include "vhost_user/backend.h"

#define RETRY_NS 1000000000ull
#define LINE_MAX_LEN 65536          /* QEMU's answer for one NIC is far shorter */
#define NIC_MAX 64

enum qmp_state { Q_GREETING, Q_CAPS, Q_READY };

struct uvn_qmp {
	struct uvn_loop *loop;
	struct uvn_rx_filter *f;
	char path[108], nic[NIC_MAX], who[64];
	struct uvn_handler h, retry_h;
	enum qmp_state state;
	size_t len;
	_Atomic uint64_t updates, errors, connects;
	char buf[LINE_MAX_LEN];
};

static void retry(struct uvn_handler *h, uint32_t events);

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* The session is over: the filter opens, and we call again in a second. */
static void hang_up(struct uvn_qmp *q, const char *why)
{
	if (why) {
		count(&q->errors);
		UVN_WARN("%s: QMP %s: %s; receive filter open until it is back", q->who, q->path, why);
	}
	uvn_loop_close(q->loop, &q->h);
	uvn_rx_filter_reset(q->f);
	q->retry_h = (struct uvn_handler){ .fd = -1, .fn = retry, .ctx = q, .light = true };
	if (uvn_timer_start(q->loop, &q->retry_h, RETRY_NS, RETRY_NS))
		UVN_ERR("%s: cannot start the QMP reconnect timer", q->who);
}

static bool say(struct uvn_qmp *q, const char *cmd)
{
	size_t n = strlen(cmd);

	if (write(q->h.fd, cmd, n) == (ssize_t)n)
		return true;
	hang_up(q, "cannot send a command");
	return false;
}

static bool query(struct uvn_qmp *q)
{
	char cmd[160];

	if (!q->nic[0])
		return say(q, "{\"execute\":\"query-rx-filter\"}\n");
	snprintf(cmd, sizeof(cmd),
		 "{\"execute\":\"query-rx-filter\",\"arguments\":{\"name\":\"%s\"}}\n", q->nic);
	return say(q, cmd);
}

static bool parse_mac(const struct js *v, uint8_t *mac)
{
	return v && v->type == JS_STR && !uvn_mac_parse(v->str, mac);
}

/* A MAC table, or its overflow as a count past what the filter keeps. */
static bool parse_table(const struct js *info, const char *key, const char *overflow,
			uint8_t *macs, uint32_t *n)
{
	const struct js *t = js_get(info, key), *o = js_get(info, overflow), *e;

	if (!t || t->type != JS_ARR || !o || o->type != JS_BOOL)
		return false;
	*n = 0;
	for (e = t->child; e; e = e->next) {
		if (*n < UVN_RX_FILTER_MACS && !parse_mac(e, macs + 6 * *n))
			return false;
		(*n)++;
	}
	if (o->b)
		*n = UVN_RX_FILTER_MACS + 1;
	return true;
}

/* RxState "normal" | "none" | "all" as the mode bits it means. */
static bool parse_state(const struct js *v, uint32_t none, uint32_t all, uint32_t *flags)
{
	if (!v || v->type != JS_STR)
		return false;
	if (!strcmp(v->str, "none"))
		*flags |= none;
	else if (!strcmp(v->str, "all"))
		*flags |= all;
	else if (strcmp(v->str, "normal"))
		return false;
	return true;
}

/* One RxFilterInfo into the filter. @return false if malformed */
static bool apply(struct uvn_qmp *q, const struct js *info)
{
	uint8_t uni[UVN_RX_FILTER_MACS * 6], multi[UVN_RX_FILTER_MACS * 6], mac[6];
	const struct js *promisc = js_get(info, "promiscuous"), *bcast = js_get(info, "broadcast-allowed");
	uint32_t flags = 0, nuni, nmulti;
	bool have_mac = parse_mac(js_get(info, "main-mac"), mac);

	if (!promisc || promisc->type != JS_BOOL || !bcast || bcast->type != JS_BOOL ||
	    !parse_state(js_get(info, "unicast"), UVN_RXF_NOUNI, UVN_RXF_ALLUNI, &flags) ||
	    !parse_state(js_get(info, "multicast"), UVN_RXF_NOMULTI, UVN_RXF_ALLMULTI, &flags) ||
	    !parse_table(info, "unicast-table", "unicast-overflow", uni, &nuni) ||
	    !parse_table(info, "multicast-table", "multicast-overflow", multi, &nmulti))
		return false;
	if (promisc->b)
		flags |= UVN_RXF_PROMISC;
	if (!bcast->b)
		flags |= UVN_RXF_NOBCAST;
	uvn_rx_filter_load(q->f, flags, have_mac ? mac : NULL, uni, nuni, multi, nmulti);
	count(&q->updates);
	return true;
}

/* query-rx-filter's answer: our NIC's entry, or the only one. */
static const char *answer(struct uvn_qmp *q, const struct js *arr)
{
	const struct js *e, *mine = NULL, *name;
	unsigned n = 0;

	for (e = arr->child; e; e = e->next, n++) {
		name = js_get(e, "name");
		if (!q->nic[0] || (name && name->type == JS_STR && !strcmp(name->str, q->nic)))
			mine = e;
	}
	if (!mine || (!q->nic[0] && n != 1))
		return q->nic[0] ? "no such NIC" : "not exactly one NIC: say which (nic=)";
	return apply(q, mine) ? NULL : "a malformed rx-filter answer";
}

/* One message. @return why the session must end, or NULL */
static const char *message(struct uvn_qmp *q, const struct js *m)
{
	const struct js *ret = js_get(m, "return"), *ev = js_get(m, "event"), *name;

	if (js_get(m, "QMP")) {
		if (q->state != Q_GREETING)
			return "a second greeting";
		q->state = Q_CAPS;
		return say(q, "{\"execute\":\"qmp_capabilities\"}\n") ? NULL : "";
	}
	if (js_get(m, "error"))
		return "an error reply";
	if (ret && ret->type == JS_OBJ && q->state == Q_CAPS) {
		q->state = Q_READY;
		return query(q) ? NULL : "";
	}
	if (ret && ret->type == JS_ARR && q->state == Q_READY)
		return answer(q, ret);
	if (ev && ev->type == JS_STR && !strcmp(ev->str, "NIC_RX_FILTER_CHANGED") &&
	    q->state == Q_READY) {
		name = js_get(js_get(m, "data"), "name");
		if (!q->nic[0] || (name && name->type == JS_STR && !strcmp(name->str, q->nic)))
			return query(q) ? NULL : "";
	}
	return NULL; /* other events and answers are not ours */
}

/* Complete lines in buf. @return false if the session ended */
static bool lines(struct uvn_qmp *q)
{
	char *start = q->buf, *nl;

	while ((nl = memchr(start, '\n', q->len - (size_t)(start - q->buf)))) {
		struct js_doc doc;
		const char *why;

		*nl = 0;
		if (js_parse(&doc, start) || doc.root->type != JS_OBJ) {
			js_free(&doc);
			hang_up(q, "a message that is not a JSON object");
			return false;
		}
		why = message(q, doc.root);
		js_free(&doc);
		if (why) {
			if (*why)
				hang_up(q, why);
			return false;
		}
		start = nl + 1;
	}
	q->len -= (size_t)(start - q->buf);
	memmove(q->buf, start, q->len);
	return true;
}

static void on_readable(struct uvn_handler *h, uint32_t events)
{
	struct uvn_qmp *q = h->ctx;
	ssize_t r;

	(void)events;
	for (;;) {
		if (q->len == sizeof(q->buf)) {
			hang_up(q, "a line too long");
			return;
		}
		r = read(h->fd, q->buf + q->len, sizeof(q->buf) - q->len);
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			hang_up(q, r ? "read failed" : NULL);
			if (!r)
				UVN_INFO("%s: QMP %s closed; receive filter open", q->who, q->path);
			return;
		}
		q->len += (size_t)r;
		if (!lines(q))
			return;
	}
}

static int dial(struct uvn_qmp *q)
{
	int fd = uvn_vu_connect(q->path);

	if (fd < 0)
		return fd;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		close(fd);
		return -errno;
	}
	q->h = (struct uvn_handler){ .fd = fd, .fn = on_readable, .ctx = q, .light = true };
	if (uvn_loop_add(q->loop, &q->h, EPOLLIN)) {
		close(fd);
		q->h.fd = -1;
		return -EIO;
	}
	q->state = Q_GREETING;
	q->len = 0;
	count(&q->connects);
	UVN_INFO("%s: following the receive filter of %s through QMP %s", q->who,
		 q->nic[0] ? q->nic : "its NIC", q->path);
	return 0;
}

static void retry(struct uvn_handler *h, uint32_t events)
{
	struct uvn_qmp *q = h->ctx;

	(void)events;
	uvn_timer_ack(h);
	if (!dial(q))
		uvn_timer_stop(q->loop, &q->retry_h);
}

/* QEMU ids: a letter, then letters, digits, '-', '.', '_' (nothing to escape). */
static bool nic_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= NIC_MAX || !((*s | 0x20) >= 'a' && (*s | 0x20) <= 'z'))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") == n;
}

int uvn_qmp_create(struct uvn_loop *loop, const char *path, const char *nic,
		   struct uvn_rx_filter *f, const char *who, struct uvn_qmp **out)
{
	struct uvn_qmp *q;

	if (!path || strlen(path) >= sizeof(q->path) || (nic && !nic_ok(nic)))
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->loop = loop;
	q->f = f;
	strcpy(q->path, path);
	if (nic)
		strcpy(q->nic, nic);
	snprintf(q->who, sizeof(q->who), "%s", who);
	uvn_rx_filter_reset(f);
	q->h.fd = -1;
	q->retry_h = (struct uvn_handler){ .fd = -1, .fn = retry, .ctx = q, .light = true };
	if (dial(q) && uvn_timer_start(loop, &q->retry_h, RETRY_NS, RETRY_NS)) {
		free(q);
		return -EIO;
	}
	*out = q;
	return 0;
}

void uvn_qmp_destroy(struct uvn_qmp *q)
{
	if (!q)
		return;
	uvn_timer_stop(q->loop, &q->retry_h);
	uvn_loop_close(q->loop, &q->h);
	free(q);
}

void uvn_qmp_stats(const struct uvn_qmp *q, struct uvn_qmp_stats *st)
{
	st->updates = atomic_load_explicit(&q->updates, memory_order_relaxed);
	st->errors = atomic_load_explicit(&q->errors, memory_order_relaxed);
	st->connects = atomic_load_explicit(&q->connects, memory_order_relaxed);
}

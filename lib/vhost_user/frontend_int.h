/* SPDX-License-Identifier: MIT */
/*
 * The frontend's connection, shared by its two halves: frontend.c (the
 * socket and the exchange of one request and its reply) and
 * frontend_msgs.c (the requests of the protocol). Internal to
 * lib/vhost_user.
 */
#ifndef UVN_VHOST_USER_FRONTEND_INT_H
#define UVN_VHOST_USER_FRONTEND_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "frontend.h"

struct uvn_vu_fe {
	int fd;
	int lfd;               /* server mode: the listening socket until accept */
	char path[108];
	bool bound;            /* server mode: path is the socket we made, removed when done */
	char name[64];
	unsigned timeout_ms;
	int stop_fd;           /* -1, or readable when connect/accept must give up */
	int err;               /* 0, or what killed the connection */
	uint64_t offered;      /* GET_FEATURES */
	uint64_t features;     /* SET_FEATURES */
	uint64_t proto;        /* protocol features negotiated */
	struct uvn_vu_rx rx;
	struct uvn_vu_fe_stats st;
};

/* The connection is dead from now on; say why once. @return fe->err */
int vu_fe_fail(struct uvn_vu_fe *fe, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif

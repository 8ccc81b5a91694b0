/* SPDX-License-Identifier: MIT */
/* vhost-user codec: framing with fds, validation per table row, reply rules. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "vhost_user/msg.h"

static int count_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
}

/* A request that passes its row: the right size and fds for every request we speak. */
static void make_valid(struct uvn_vu_msg *m, const struct uvn_vu_req_info *info, int fd)
{
	uvn_vu_msg_init(m, info->id, VHOST_USER_VERSION, info->size);
	if (info->size_rule == UVN_VU_SZ_MEMORY) {
		m->p.memory.nregions = 2;
		m->hdr.size = 8 + 2 * 32;
	} else if (info->size_rule == UVN_VU_SZ_CONFIG) {
		m->p.config.size = 6;
		m->hdr.size = 12 + 6;
	}
	switch (info->fds) {
	case UVN_VU_FD_NONE:
	case UVN_VU_FD_OPTIONAL:
		break;
	case UVN_VU_FD_ONE:
	case UVN_VU_FD_NOFD_BIT:
		m->fds[0] = fd;
		m->nfds = 1;
		break;
	case UVN_VU_FD_PER_REGION:
		m->fds[0] = m->fds[1] = fd;
		m->nfds = 2;
		break;
	}
}

static void test_rows(void **state)
{
	const struct uvn_vu_req_info *info, *got;
	unsigned rows = 0;
	struct uvn_vu_msg m;

	(void)state;
	for (uint32_t id = 0; id < 64; id++) {
		info = uvn_vu_req_info(id);
		if (!info) {
			uvn_vu_msg_init(&m, id, VHOST_USER_VERSION, 0);
			assert_int_equal(uvn_vu_msg_check_request(&m, &got), -ENOSYS);
			continue;
		}
		rows++;
		assert_int_equal(info->id, id);
		assert_string_equal(uvn_vu_req_name(id), info->name);
		make_valid(&m, info, 100);
		assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
		assert_ptr_equal(got, info);
		/* NEED_REPLY is allowed on any request */
		m.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
		assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
		/* one byte more or less */
		m.hdr.size++;
		assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
		m.hdr.size -= 2;
		if (m.hdr.size != UINT32_MAX)
			assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
		m.hdr.size++;
		/* one fd too many */
		if (info->fds != UVN_VU_FD_NOFD_BIT) {
			m.fds[m.nfds++] = 100;
			if (info->fds == UVN_VU_FD_OPTIONAL) {
				assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
				m.fds[m.nfds++] = 100;
			}
			assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADF);
		}
		/* flags: version 0, 2, 3; REPLY set; an unknown bit */
		make_valid(&m, info, 100);
		for (uint32_t v = 0; v < 4; v++) {
			m.hdr.flags = v;
			assert_int_equal(uvn_vu_msg_check_request(&m, &got), v == 1 ? 0 : -EPROTO);
		}
		m.hdr.flags = VHOST_USER_VERSION | VHOST_USER_REPLY_MASK;
		assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EPROTO);
		m.hdr.flags = VHOST_USER_VERSION | (1u << 4);
		assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EPROTO);
	}
	assert_int_equal(rows, 28);
	assert_string_equal(uvn_vu_req_name(VHOST_USER_IOTLB_MSG), "IOTLB_MSG");
	assert_string_equal(uvn_vu_req_name(9999), "UNKNOWN");
	uvn_vu_msg_init(&m, 9999, VHOST_USER_VERSION, 0);
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -ENOSYS);
	assert_null(got);
}

/* The fd rules with their special cases. */
static void test_fd_rules(void **state)
{
	const struct uvn_vu_req_info *got;
	struct uvn_vu_msg m;

	(void)state;
	/* NOFD bit: no fd with it, exactly one without it */
	uvn_vu_msg_init(&m, VHOST_USER_SET_VRING_KICK, VHOST_USER_VERSION, 8);
	m.p.u64 = 3 | VHOST_USER_VRING_NOFD_MASK;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
	m.nfds = 1;
	m.fds[0] = 100;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADF);
	m.p.u64 = 3;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
	m.nfds = 0;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADF);
	/* bits above 8 are not part of the encoding */
	m.p.u64 = 3 | (1u << 9) | VHOST_USER_VRING_NOFD_MASK;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
	/* memory table: 1..8 regions, one fd each */
	uvn_vu_msg_init(&m, VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION, 8);
	m.p.memory.nregions = 0;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
	m.p.memory.nregions = 9;
	m.hdr.size = 8 + 9 * 32;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
	m.p.memory.nregions = 3;
	m.hdr.size = 8 + 3 * 32;
	m.nfds = 2;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADF);
	m.nfds = 3;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
	m.hdr.size = 8 + 2 * 32;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
	/* config: at most 256 bytes */
	uvn_vu_msg_init(&m, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, 12 + 257);
	m.p.config.size = 257;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
	m.p.config.size = 256;
	m.hdr.size = 12 + 256;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), 0);
	m.hdr.size = 8;
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
	/* larger than the union */
	uvn_vu_msg_init(&m, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, 4096);
	assert_int_equal(uvn_vu_msg_check_request(&m, &got), -EBADMSG);
}

static void test_roundtrip_with_fds(void **state)
{
	int sv[2], efd = eventfd(0, EFD_CLOEXEC), fds0;
	struct uvn_vu_msg m;
	struct uvn_vu_rx rx;
	uint64_t v = 7;

	(void)state;
	pair(sv);
	fds0 = count_fds();
	uvn_vu_msg_init(&m, VHOST_USER_SET_VRING_CALL, VHOST_USER_VERSION, 8);
	m.p.u64 = 5;
	m.fds[0] = efd;
	m.nfds = 1;
	assert_int_equal(uvn_vu_msg_send(sv[0], &m), 0);
	uvn_vu_rx_init(&rx);
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), 1);
	assert_int_equal(rx.msg.hdr.request, VHOST_USER_SET_VRING_CALL);
	assert_int_equal(rx.msg.hdr.size, 8);
	assert_int_equal(rx.msg.p.u64, 5);
	assert_int_equal(rx.msg.nfds, 1);
	assert_int_equal(count_fds(), fds0 + 1);
	/* it is the same eventfd */
	assert_int_equal(write(rx.msg.fds[0], &v, 8), 8);
	assert_int_equal(read(efd, &v, 8), 8);
	assert_int_equal(v, 7);
	uvn_vu_rx_reset(&rx);
	assert_int_equal(count_fds(), fds0);
	/* nothing more: incomplete, not an error */
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), 0);
	close(efd);
	close(sv[0]);
	close(sv[1]);
}

/* Bytes trickling in on a nonblocking socket are kept until the message is whole. */
static void test_partial_and_eof(void **state)
{
	int sv[2];
	uint8_t raw[UVN_VU_HDR_SIZE + 8];
	struct uvn_vu_hdr h = { VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, 8 };
	uint64_t f = 0x1234;
	struct uvn_vu_rx rx;

	(void)state;
	memcpy(raw, &h, sizeof(h));
	memcpy(raw + UVN_VU_HDR_SIZE, &f, 8);
	pair(sv);
	uvn_vu_rx_init(&rx);
	for (size_t i = 0; i < sizeof(raw) - 1; i++) {
		assert_int_equal(write(sv[0], raw + i, 1), 1);
		assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), 0);
	}
	assert_int_equal(write(sv[0], raw + sizeof(raw) - 1, 1), 1);
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), 1);
	assert_int_equal(rx.msg.p.u64, 0x1234);
	uvn_vu_rx_init(&rx);
	/* closed in the middle of a message */
	assert_int_equal(write(sv[0], raw, 5), 5);
	close(sv[0]);
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), 0 - EPIPE);
	close(sv[1]);
	/* closed between messages */
	pair(sv);
	close(sv[0]);
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), -ECONNRESET);
	close(sv[1]);
	/* a header announcing more than the union: refused before reading it */
	pair(sv);
	h.size = 4096;
	assert_int_equal(write(sv[0], &h, sizeof(h)), (ssize_t)sizeof(h));
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
}

/* More than 8 fds: refused, and none of them stays open here. */
static void test_too_many_fds(void **state)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 12)];
		struct cmsghdr align;
	} ctl;
	struct uvn_vu_hdr h = { VHOST_USER_SET_MEM_TABLE, VHOST_USER_VERSION, 0 };
	struct iovec iov = { &h, sizeof(h) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	int sv[2], fds[12], fds0;
	struct uvn_vu_rx rx;

	(void)state;
	pair(sv);
	for (int i = 0; i < 12; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	assert_int_equal(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(h));
	for (int i = 0; i < 12; i++)
		close(fds[i]);
	fds0 = count_fds();
	uvn_vu_rx_init(&rx);
	assert_int_equal(uvn_vu_msg_recv(sv[1], &rx), -ETOOMANYREFS);
	assert_int_equal(count_fds(), fds0);
	close(sv[0]);
	close(sv[1]);
}

static void test_replies(void **state)
{
	struct uvn_vu_msg req, rep;

	(void)state;
	uvn_vu_msg_init(&req, VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, 0);
	uvn_vu_msg_init_reply(&rep, &req, 8);
	assert_int_equal(rep.hdr.flags, VHOST_USER_REPLY_MASK | VHOST_USER_VERSION);
	assert_int_equal(rep.hdr.flags, 0x5);
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), 0);
	rep.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), -EPROTO);
	rep.hdr.flags = VHOST_USER_VERSION;
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), -EPROTO);
	uvn_vu_msg_init_reply(&rep, &req, 4);
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), -EBADMSG);
	uvn_vu_msg_init_reply(&rep, &req, 8);
	rep.hdr.request = VHOST_USER_GET_PROTOCOL_FEATURES;
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), -EPROTO);
	uvn_vu_msg_init_reply(&rep, &req, 8);
	rep.nfds = 1;
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), -EBADF);
	/* GET_VRING_BASE answers a state, GET_CONFIG its size or nothing */
	uvn_vu_msg_init(&req, VHOST_USER_GET_VRING_BASE, VHOST_USER_VERSION, 8);
	uvn_vu_msg_init_reply(&rep, &req, 8);
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), 0);
	uvn_vu_msg_init(&req, VHOST_USER_GET_CONFIG, VHOST_USER_VERSION, 12 + 6);
	uvn_vu_msg_init_reply(&rep, &req, 0);
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), 0);
	rep.hdr.size = 12 + 6;
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), 0);
	rep.hdr.size = 12 + 4;
	assert_int_equal(uvn_vu_msg_check_reply(&req, &rep), -EBADMSG);
	/* who answers: ACK rows only when asked and negotiated */
	uvn_vu_msg_init(&req, VHOST_USER_SET_FEATURES, VHOST_USER_VERSION, 8);
	assert_false(uvn_vu_msg_expects_reply(&req, true));
	req.hdr.flags |= VHOST_USER_NEED_REPLY_MASK;
	assert_false(uvn_vu_msg_expects_reply(&req, false));
	assert_true(uvn_vu_msg_expects_reply(&req, true));
	uvn_vu_msg_init(&req, VHOST_USER_GET_FEATURES, VHOST_USER_VERSION, 0);
	assert_true(uvn_vu_msg_expects_reply(&req, false));
	uvn_vu_msg_init(&req, VHOST_USER_SET_LOG_BASE, VHOST_USER_VERSION, 16);
	assert_true(uvn_vu_msg_expects_reply(&req, false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_fd_rules),
		cmocka_unit_test(test_roundtrip_with_fds),
		cmocka_unit_test(test_partial_and_eof),
		cmocka_unit_test(test_too_many_fds),
		cmocka_unit_test(test_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

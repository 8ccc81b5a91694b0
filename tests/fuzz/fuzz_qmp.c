/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the QMP client that follows a guest's receive filter
 * (lib/port/qmp.c), fed what a hostile QEMU could send on its monitor.
 *
 * Input: byte 0 bit 0: follow "nic0" (else: the only NIC), bit 1: close
 * our end after the input (the client sees EOF); the rest is the stream
 * the client reads, sent in pieces of 1 + (byte 0 >> 2) * 64 bytes with
 * the client's loop run between them; what the client writes is read and
 * dropped. Checked: no crash or leak, and the filter answers for every
 * kind of address afterwards (its sequence counter is even: no write
 * section left open).
 *
 * The loop and our listening socket live for the whole run; each input
 * dials a new client, and ends with the loop's epoll set empty and no
 * connection left in the listener's queue, so that every input starts from
 * the same state. FZ_REPEAT=1 runs each input twice and checks that both
 * runs end alike (the filter, the client's counters, what it wrote);
 * FZ_DIGEST=1 prints a digest of how each input ended, to compare a run
 * alone with one among others.
 *
 * The client's socket is swapped for one end of a SOCK_SEQPACKET pair
 * once it connected (same fd number, same handler in the loop): a read
 * returns one record, so a run of pieces goes out with one sendmmsg and
 * the client still reads them one piece per read, as it did when each
 * piece was sent and read on its own; a run ends with the first piece
 * that holds a newline, after which the client's answers are read, as
 * before. The client's code does not tell a stream from a seqpacket
 * socket (read, write, EOF after our shutdown); pieces are never empty
 * (an empty record would read as EOF) and never larger than the room
 * left in its line buffer (an input longer than SEQ_MAX keeps the stream
 * socket, one piece per send). One byte per piece still costs a record
 * and a read each: that floor is the socket's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_mem.h" /* CHECK */
#include "fuzz_repeat.h"
#include "net/device/filter.h"
#include "port/qmp.h"
#include "util/log.h"
#include "util/loop.h"
#include "vhost_user/backend.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static int lfd = -1;
static struct uvn_loop *loop;
static int loop_info = -1; /* /proc/self/fdinfo of the loop's epoll fd */
static int loop_ep = -1;   /* that epoll fd */

/* How an input ended, to compare two runs of it (FZ_REPEAT). */
struct outcome {
	struct uvn_rx_filter f;
	struct uvn_qmp_stats st;
	uint64_t written;  /* bytes the client sent us */
};

/* The fdinfo of the process's one epoll fd (the loop's), kept open. */
static int open_loop_info(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1;

	CHECK(d);
	while (fd < 0 && (e = readdir(d))) {
		char l[64];
		ssize_t n = readlinkat(dirfd(d), e->d_name, l, sizeof(l) - 1);

		if (n > 0) {
			l[n] = 0;
			if (!strcmp(l, "anon_inode:[eventpoll]")) {
				char p[64];

				snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", e->d_name);
				fd = open(p, O_RDONLY | O_CLOEXEC);
				loop_ep = atoi(e->d_name);
			}
		}
	}
	closedir(d);
	CHECK(fd >= 0);
	return fd;
}

/* libFuzzer ends with exit(): leave no socket behind in /tmp. */
static void remove_sock(void)
{
	unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Quiet (errors only: the peer's are the point), unless UVN_LOG says:
	 * -1 would mean "as UVN_LOG says", info when unset, a line or more
	 * per input. */
	if (!getenv("UVN_LOG"))
		uvn_log_level = UVN_LOG_ERR;
	snprintf(path, sizeof(path), "/tmp/uvn-fuzz-qmp-%d.sock", (int)getpid());
	unlink(path);
	lfd = uvn_vu_listen(path);
	if (lfd >= 0)
		atexit(remove_sock);
	/* non-blocking: an input ends by taking whatever connection is left */
	if (lfd < 0 || fcntl(lfd, F_SETFL, O_NONBLOCK) || uvn_loop_create(&loop))
		abort();
	loop_info = open_loop_info();
	return 0;
}

/*
 * The loop's registrations as the kernel lists them ("tfd: %d events: %x
 * data: %llx", data being the struct uvn_handler): the first one's fd and
 * handler. @return how many there are
 */
static unsigned registrations(int *fd, struct uvn_handler **h)
{
	char buf[4096];
	unsigned n = 0;
	ssize_t r = pread(loop_info, buf, sizeof(buf) - 1, 0);

	CHECK(r > 0 && (size_t)r < sizeof(buf) - 1);
	buf[r] = 0;
	for (char *l = strstr(buf, "tfd:"); l; l = strstr(l + 4, "tfd:")) {
		unsigned long long data;
		int tfd;

		CHECK(sscanf(l, "tfd: %d events: %*x data: %llx", &tfd, &data) == 2);
		if (!n++) {
			*fd = tfd;
			*h = (struct uvn_handler *)(uintptr_t)data;
		}
	}
	return n;
}

static uint64_t drain(int fd)
{
	char sink[4096];
	uint64_t got = 0;
	ssize_t r;

	while ((r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		got += (uint64_t)r;
	return got;
}

/* The client's socket in the loop, and its read handler. */
static struct uvn_handler *client;
static int client_fd;

/*
 * The client's turn after a piece: what its loop would run. Its socket is
 * the one thing in the loop that can be ready (its other handler, the
 * reconnect timer after a hangup, is a second away), so its read handler
 * is run here, while the socket is still the one it dialled, rather than
 * found by a round trip through epoll. It reads until the socket is empty.
 * It writes only for a line it read whole: what it wrote is read when the
 * piece held a newline, and at the end.
 */
static void run(int sfd, bool newline, struct outcome *o)
{
	if (client->fd == client_fd)
		client->fn(client, EPOLLIN);
	if (newline)
		o->written += drain(sfd);
}

/*
 * The client's socket, just dialled and registered, becomes one end of a
 * SOCK_SEQPACKET pair: same fd number, registered again with the same
 * handler. @return our end (the stream socket we accepted is closed)
 */
static int to_seqpacket(int sfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = client };
	int sp[2];

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp) == 0);
	CHECK(epoll_ctl(loop_ep, EPOLL_CTL_DEL, client_fd, NULL) == 0);
	CHECK(dup3(sp[0], client_fd, O_CLOEXEC) == client_fd);
	close(sp[0]);
	CHECK(epoll_ctl(loop_ep, EPOLL_CTL_ADD, client_fd, &ev) == 0);
	close(sfd);
	return sp[1];
}

/* Records one sendmmsg sends at most; and the input size up to which
 * pieces go as records (a record longer than the room left in the
 * client's line buffer would be cut short, where a stream is read on). */
#define BATCH 64
#define SEQ_MAX 32768

/*
 * Send pieces from @off: as many as go in one sendmmsg, up to and
 * including the first that holds a newline (on a stream socket, one).
 * @return bytes sent (0: the client hung up, or reads no more now);
 * *@newline: a piece sent held one
 */
static size_t send_pieces(int sfd, const uint8_t *data, size_t size, size_t off, size_t piece,
			  unsigned max, bool *newline)
{
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	unsigned k = 0;
	size_t sent = 0;
	int r;

	*newline = false;
	for (size_t o = off; k < max && o < size && !*newline; k++) {
		size_t n = size - o < piece ? size - o : piece;

		iov[k] = (struct iovec){ (void *)(data + o), n };
		mm[k] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[k], .msg_iovlen = 1 } };
		*newline = memchr(data + o, '\n', n) != NULL;
		o += n;
	}
	r = sendmmsg(sfd, mm, k, MSG_NOSIGNAL | MSG_DONTWAIT);
	*newline = false;
	for (int i = 0; i < r; i++) {
		/* a stream socket may take part of its one piece */
		*newline |= memchr(iov[i].iov_base, '\n', mm[i].msg_len) != NULL;
		sent += mm[i].msg_len;
	}
	return sent;
}

static void run_input(const uint8_t *data, size_t size, void *out)
{
	struct outcome mine, *o = out ? out : &mine;
	static const uint8_t macs[][6] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, { 0x01, 0, 0x5e, 0, 0, 1 },
		{ 0x52, 0x54, 0, 0x12, 0x34, 0x56 }, { 0x02, 0, 0, 0, 0, 2 },
	};
	bool seq = size <= SEQ_MAX, newline;
	struct uvn_qmp *q;
	size_t piece, off = 1, w;
	int sfd, stray;

	piece = 1 + (size_t)(data[0] >> 2) * 64;
	memset(o, 0, sizeof(*o));
	if (uvn_qmp_create(loop, path, data[0] & 1 ? "nic0" : NULL, &o->f, "fuzz", &q))
		abort();
	sfd = uvn_vu_accept(lfd);
	if (sfd < 0)
		abort();
	CHECK(registrations(&client_fd, &client) == 1 && client->fd == client_fd);
	if (seq)
		sfd = to_seqpacket(sfd);
	while (off < size && (w = send_pieces(sfd, data, size, off, piece, seq ? BATCH : 1, &newline))) {
		run(sfd, newline, o);
		off += w;
	}
	if (data[0] & 2)
		shutdown(sfd, SHUT_WR);
	run(sfd, true, o);
	if (atomic_load(&o->f.seq) & 1)
		abort();
	for (unsigned i = 0; i < sizeof(macs) / sizeof(macs[0]); i++)
		(void)uvn_rx_filter_pass(&o->f, macs[i]);
	uvn_qmp_stats(q, &o->st);
	uvn_qmp_destroy(q);
	close(sfd);
	/* The next input starts as this one did: a client that redialled
	 * (an input longer than its one-second retry) left a connection. */
	while ((stray = uvn_vu_accept(lfd)) >= 0)
		close(stray);
	CHECK(registrations(&client_fd, &client) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome a, b;

	if (size)
		fz_run_checked(run_input, data, size, &a, &b, sizeof(a));
	return 0;
}

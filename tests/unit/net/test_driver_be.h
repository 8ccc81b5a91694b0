/* SPDX-License-Identifier: MIT */
/*
 * Test helper: a vhost-user backend in a thread of the test process, made
 * of the project's own device half (lib/vhost_user backend + lib/net/device
 * data path), listening on a socket in a private temporary directory. The
 * driver under test connects to it like to any backend. Frames the driver
 * sends are echoed back (loop) or recorded (sink); frames can be injected
 * towards the driver; the connection can be cut or a ring corrupted.
 */
#ifndef UVN_TEST_DRIVER_BE_H
#define UVN_TEST_DRIVER_BE_H

#include <stdbool.h>
#include <stdint.h>

enum tbe_mode { TBE_LOOP, TBE_SINK };

struct tbe_cfg {
	uint64_t features;      /* offered virtio features (0: the default set) */
	uint64_t protocol;      /* offered protocol features (0: the backend's default) */
	unsigned pairs;         /* queue pairs (1 + ctrl queue when > 1 or ctrl) */
	bool ctrl;              /* a control queue even with one pair */
	enum tbe_mode mode;
	bool stall;             /* do not process the data rings (until tbe_unstall) */
};

struct tbe;

/* Default offer: VERSION_1, MRG_RXBUF, INDIRECT, EVENT_IDX, RING_PACKED, IN_ORDER, CSUM, GUEST_CSUM. */
uint64_t tbe_default_features(void);

/* Start listening; @path receives the socket path. */
struct tbe *tbe_start(const struct tbe_cfg *cfg, const char **path);

/* Stop the thread, drop the connection, free everything. */
void tbe_stop(struct tbe *b);

/* Frames the device took from the driver's tx rings / put into its rx rings. */
uint64_t tbe_tx_frames(struct tbe *b);
uint64_t tbe_rx_frames(struct tbe *b);

/* Sink mode: copy recorded frame @i (in arrival order) into @buf. @return its length or -1 */
int tbe_frame(struct tbe *b, unsigned i, void *buf, unsigned cap);

/* Offloads of recorded frame @i (the header the driver sent). @return 0 or -1 */
int tbe_frame_hdr(struct tbe *b, unsigned i, uint8_t *flags, uint8_t *gso_type);

/* Queue a frame towards the driver on pair @q. */
void tbe_inject(struct tbe *b, unsigned q, const void *frame, unsigned len);

/* Frames injected and not yet delivered. */
unsigned tbe_pending(struct tbe *b);

/* Resume processing after cfg.stall. */
void tbe_unstall(struct tbe *b);

/* Close the connection abruptly, as if the backend died. */
void tbe_kill(struct tbe *b);

/* Write a used element with an id that was never made available into the rx ring of pair 0. */
void tbe_corrupt(struct tbe *b);

/* Send a few bytes on the vhost-user socket unasked. */
void tbe_babble(struct tbe *b);

/* Control commands answered, and the last MQ pairs set (0: none). */
unsigned tbe_ctrl_cmds(struct tbe *b);
unsigned tbe_pairs_set(struct tbe *b);

/*
 * What the backend did so far: a count that grows with every pass that took
 * or delivered frames or answered control commands, every connection and
 * every request served. To wait for the backend: read it, look at what you
 * wait for, and if it is not there, tbe_wait() for the count to move.
 */
uint64_t tbe_events(struct tbe *b);

/* Wait until tbe_events() is past @seen. @return false if nothing happened
 * for 20 s: a guard against a hung test, never a timing. */
bool tbe_wait(struct tbe *b, uint64_t seen);

/* Wait until the device took @n frames from the driver's tx rings. @return
 * false as tbe_wait() */
bool tbe_wait_tx_frames(struct tbe *b, uint64_t n);

/* Is a driver connected (the session exists)? */
bool tbe_connected(struct tbe *b);

/* Frames the device dropped (no rx buffer, too big, bad header), all queues. */
uint64_t tbe_drops(struct tbe *b);

/* The negotiated features and protocol features. */
uint64_t tbe_features(struct tbe *b);

#endif

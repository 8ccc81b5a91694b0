/* SPDX-License-Identifier: MIT */
/*
 * Device side: descriptors -> iovecs, validated, through the caller's
 * address translation. Used by both layouts; the ring files read the
 * descriptors out of the ring, this file turns each one into iovecs and
 * walks indirect tables.
 */
#include "vq.h"

void uvn_chain_begin(struct uvn_chain_walk *w, struct uvn_vq_dev *vq, struct iovec *iov,
		     unsigned iov_max)
{
	w->vq = vq;
	w->iov = iov;
	/* The chain reports its iovec counts in 16 bits. */
	w->iov_max = !iov ? 0 : iov_max < UINT16_MAX ? iov_max : UINT16_MAX;
	w->cap = w->iov_max > UVN_VQ_MAX_CHAIN_IOV ? w->iov_max : UVN_VQ_MAX_CHAIN_IOV;
	w->niov = 0;
	w->nout = 0;
	w->out_len = 0;
	w->in_len = 0;
}

static uint16_t sat16(unsigned v)
{
	return v < UINT16_MAX ? (uint16_t)v : UINT16_MAX;
}

bool uvn_chain_end(const struct uvn_chain_walk *w, struct uvn_vq_chain *ch)
{
	ch->nout = sat16(w->nout);
	ch->nin = sat16(w->niov - w->nout);
	ch->out_len = (uint32_t)w->out_len;
	ch->in_len = (uint32_t)w->in_len;
	return UVN_UNLIKELY(w->niov > w->iov_max) && w->iov;
}

int uvn_chain_iov_full(struct uvn_vq_chain *ch, uint16_t id, unsigned ndesc)
{
	ch->id = id;
	ch->ndesc = (uint16_t)ndesc;
	return -UVN_VQ_E_IOV_FULL;
}

int uvn_chain_add(struct uvn_chain_walk *w, const struct uvn_desc *d)
{
	bool write = d->flags & VRING_DESC_F_WRITE;
	uint64_t addr = d->addr, left = d->len;

	if (UVN_UNLIKELY(d->len == 0))
		return UVN_VQ_E_ZERO_LEN;
	/* Readable buffers come first: once one writable buffer was seen
	 * (in_len > 0, since lengths are non-zero), a readable one is an error. */
	if (UVN_UNLIKELY(!write && w->in_len))
		return UVN_VQ_E_WRITE_ORDER;
	if (UVN_UNLIKELY(w->out_len + w->in_len + d->len > UINT32_MAX))
		return UVN_VQ_E_LEN_OVERFLOW;
	if (UVN_UNLIKELY(addr + left < addr))
		return UVN_VQ_E_UNMAPPED;
	while (left) {
		uint64_t n = left;
		void *p;

		p = w->vq->xlate(w->vq->xlate_ctx, addr, &n);
		if (UVN_UNLIKELY(!p || n == 0))
			return UVN_VQ_E_UNMAPPED;
		if (n > left)
			n = left;
		/* Past the caller's array: counted, the chain checked on, up
		 * to the cap that bounds one pop's work. */
		if (UVN_UNLIKELY(w->niov >= w->cap))
			return UVN_VQ_E_CHAIN_LONG;
		if (UVN_LIKELY(w->niov < w->iov_max)) {
			w->iov[w->niov].iov_base = p;
			w->iov[w->niov].iov_len = n;
		}
		w->niov++;
		addr += n;
		left -= n;
	}
	if (write) {
		w->in_len += d->len;
	} else {
		w->out_len += d->len;
		w->nout = w->niov;
	}
	return 0;
}

/* Indirect table entries: split and packed descriptors differ in the second word. */
static void decode_entry(const void *p, bool packed, struct uvn_desc *out)
{
	if (packed)
		uvn_desc_read_packed(p, out);
	else
		uvn_desc_read_split(p, out);
}

/* The table is not contiguous in our mapping: check it is mapped at all. */
static bool table_mapped(struct uvn_vq_dev *vq, uint64_t addr, uint64_t len)
{
	while (len) {
		uint64_t n = len;

		if (!vq->xlate(vq->xlate_ctx, addr, &n) || n == 0)
			return false;
		if (n > len)
			n = len;
		addr += n;
		len -= n;
	}
	return true;
}

/* Copy one entry of a table that straddles mapping pieces. */
static bool copy_entry(struct uvn_vq_dev *vq, uint64_t addr, uint8_t buf[16])
{
	unsigned off = 0;

	while (off < 16) {
		uint64_t n = 16 - off;
		const uint8_t *p = vq->xlate(vq->xlate_ctx, addr + off, &n);

		/* table_mapped() said yes; a translation that changed its mind
		 * since is still not dereferenced. */
		if (UVN_UNLIKELY(!p || n == 0))
			return false;
		if (n > 16u - off)
			n = 16u - off;
		memcpy(buf + off, p, n);
		off += (unsigned)n;
	}
	return true;
}

/* Read entry @i of the table, from the mapping or piecewise. */
static bool read_entry(struct uvn_vq_dev *vq, const uint8_t *table, uint64_t addr, unsigned i,
		       struct uvn_desc *e)
{
	uint8_t buf[16];

	if (table) {
		decode_entry(table + 16 * i, vq->packed, e);
		return true;
	}
	if (!copy_entry(vq, addr + 16ull * i, buf))
		return false;
	decode_entry(buf, vq->packed, e);
	return true;
}

int uvn_chain_indirect(struct uvn_chain_walk *w, const struct uvn_desc *d)
{
	struct uvn_vq_dev *vq = w->vq;
	const uint8_t *table;
	uint64_t n = d->len;
	unsigned count, i = 0, steps = 0;

	if (UVN_UNLIKELY(!vq->indirect_ok))
		return UVN_VQ_E_INDIRECT_FEATURE;
	if (UVN_UNLIKELY(d->flags & VRING_DESC_F_NEXT))
		return UVN_VQ_E_INDIRECT_NEXT;
	if (UVN_UNLIKELY(d->len == 0 || d->len % 16 || d->len / 16 > vq->num))
		return UVN_VQ_E_INDIRECT_LEN;
	count = d->len / 16;
	if (UVN_UNLIKELY(d->addr + d->len < d->addr))
		return UVN_VQ_E_INDIRECT_MAP;
	table = vq->xlate(vq->xlate_ctx, d->addr, &n);
	if (UVN_UNLIKELY(!table))
		return UVN_VQ_E_INDIRECT_MAP;
	if (n < d->len) {
		/* Straddles two mapping pieces (CVE-2018-1059): entries are then
		 * copied piecewise, after checking the whole table is mapped. */
		if (!table_mapped(vq, d->addr, d->len))
			return UVN_VQ_E_INDIRECT_MAP;
		table = NULL;
	}
	uvn_stat_inc(&vq->st.indirect);
	for (;;) {
		struct uvn_desc e;
		int ret;

		if (UVN_UNLIKELY(steps++ >= count))
			return UVN_VQ_E_LOOP;
		if (UVN_UNLIKELY(!read_entry(vq, table, d->addr, i, &e)))
			return UVN_VQ_E_INDIRECT_MAP;
		if (UVN_UNLIKELY(e.flags & VRING_DESC_F_INDIRECT))
			return UVN_VQ_E_INDIRECT_NESTED;
		ret = uvn_chain_add(w, &e);
		if (UVN_UNLIKELY(ret))
			return ret;
		if (vq->packed) {
			/* Packed tables are read in order; NEXT means nothing there. */
			if (++i == count)
				return 0;
			continue;
		}
		if (!(e.flags & VRING_DESC_F_NEXT))
			return 0;
		i = e.next;
		if (UVN_UNLIKELY(i >= count))
			return UVN_VQ_E_NEXT_RANGE;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * The registry of guarded mappings and the SIGBUS handler that reads it.
 *
 * The handler may run on any thread at any moment, so the registry is a
 * fixed array of slots read without locks: a slot's state is published
 * with release after its fields, and read with acquire before them. A slot
 * is claimed by compare-and-swap (registrations may come from several
 * control threads of different library users). It is freed before its
 * mapping goes away, and the callers guarantee nobody touches a mapping
 * while it is being registered or unregistered (the vhost-user backend
 * parks its queues around memory changes), so the handler never acts on a
 * slot whose range is being reused.
 *
 * Inside the handler only async-signal-safe work is done: atomics, the raw
 * mmap and write system calls (raw, so that no sanitizer interceptor runs
 * here), sigaction and raise.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guard.h"

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
	       "the SIGBUS handler needs lock-free atomics");

enum slot_state {
	SLOT_FREE,
	SLOT_CLAIMED,   /* being filled in: the handler ignores it */
	SLOT_LIVE,      /* a file mapping that may fault */
	SLOT_REPLACING, /* a handler is swapping in zero memory */
	SLOT_REPLACED,  /* anonymous zero memory now: faulted */
};

struct slot {
	_Atomic unsigned state;
	_Atomic uintptr_t start;
	_Atomic size_t len;
	struct uvn_mem_owner *_Atomic owner;
};

static struct slot slots[UVN_MEM_GUARD_SLOTS];
/* Slots at or above this were never used: the handler's scan stops here. */
static _Atomic unsigned slots_hi;
static _Atomic uint64_t faults_total;

/* A handler that keeps finding a replaced mapping faulting gives up after
 * this many retries rather than loop forever (it cannot happen with
 * anonymous memory; this is the belt to those braces). */
#define RETRY_LIMIT (1u << 20)
static _Atomic unsigned retries;

static struct sigaction prev;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* --------------------------------------------------------------- handler */

static struct slot *lookup(uintptr_t a)
{
	unsigned hi = atomic_load_explicit(&slots_hi, memory_order_acquire);

	for (unsigned i = 0; i < hi; i++) {
		struct slot *s = &slots[i];
		unsigned st = atomic_load_explicit(&s->state, memory_order_acquire);

		if (st < SLOT_LIVE)
			continue;
		if (a - atomic_load_explicit(&s->start, memory_order_relaxed) <
		    atomic_load_explicit(&s->len, memory_order_relaxed))
			return s;
	}
	return NULL;
}

static void *raw_mmap(void *addr, size_t len, int prot, int flags)
{
#ifdef SYS_mmap
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, -1, 0L);
#else
	return mmap(addr, len, prot, flags, -1, 0);
#endif
}

static void notify(struct uvn_mem_owner *o)
{
	uint64_t one = 1;

	atomic_fetch_add_explicit(&o->faults, 1, memory_order_relaxed);
	/* Non-blocking eventfd: at worst its counter is saturated, and then
	 * it is readable already. */
	if (o->efd >= 0)
		(void)syscall(SYS_write, o->efd, &one, sizeof(one));
}

/*
 * The fault hit guarded slot @s. Replace the whole mapping (not one page:
 * a hugetlbfs mapping can only be replaced in huge-page units, and the
 * rest of a shrunk file faults next anyway) with private zero memory.
 * @return true if the access can be retried
 */
static bool rescue(struct slot *s)
{
	unsigned st = SLOT_LIVE;
	uintptr_t start = atomic_load_explicit(&s->start, memory_order_relaxed);
	size_t len = atomic_load_explicit(&s->len, memory_order_relaxed);
	struct uvn_mem_owner *o;
	void *p;

	if (!atomic_compare_exchange_strong_explicit(&s->state, &st, SLOT_REPLACING,
						     memory_order_acq_rel, memory_order_acquire)) {
		/* Another thread is replacing it, or has since this thread
		 * faulted on the old file pages: retry the access. */
		return atomic_fetch_add_explicit(&retries, 1, memory_order_relaxed) < RETRY_LIMIT;
	}
	p = raw_mmap((void *)start, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE);
	if (p != (void *)start)
		return false; /* could not: die as we would have */
	atomic_store_explicit(&s->state, SLOT_REPLACED, memory_order_release);
	atomic_fetch_add_explicit(&faults_total, 1, memory_order_relaxed);
	o = atomic_load_explicit(&s->owner, memory_order_acquire);
	if (o)
		notify(o);
	return true;
}

/* Not ours: what would have happened without us. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;

	if (prev.sa_flags & SA_SIGINFO) {
		prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
		return;
	}
	/* Default action (the kernel overrides SIG_IGN for a fault too):
	 * a fault recurs when we return and kills with the faulting address
	 * in the core; a sent signal is sent again. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (!si || si->si_code <= 0)
		raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct slot *s;

	/* si_code > 0: raised by the kernel for an access, with si_addr. */
	if (si && si->si_code > 0 && (s = lookup((uintptr_t)si->si_addr)) && rescue(s)) {
		errno = saved;
		return;
	}
	pass_on(sig, si, uc);
	errno = saved;
}

/*
 * Make sure on_sigbus is the SIGBUS handler, chaining to whatever was there.
 * Checked at every registration, not once: a handler installed after ours
 * that does not chain back (a test framework's, installed per test) would
 * otherwise disarm the guard for good. Registrations are rare, and under a
 * lock so that two of them never chain us to ourselves.
 */
static int ensure_handler(void)
{
	struct sigaction cur, sa;
	int ret = 0;

	pthread_mutex_lock(&install_lock);
	if (sigaction(SIGBUS, NULL, &cur)) {
		ret = -errno;
	} else if (!(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_sigbus) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigbus;
		/* SA_ONSTACK: on a thread with an alternate stack (sanitizers
		 * give their threads one), use it. */
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		/* prev changes only while on_sigbus is not installed, so no
		 * handler reads it meanwhile. */
		prev = cur;
		if (sigaction(SIGBUS, &sa, NULL))
			ret = -errno;
	}
	pthread_mutex_unlock(&install_lock);
	return ret;
}

/* -------------------------------------------------------------- registry */

int uvn_mem_guard_add(void *addr, size_t len, struct uvn_mem_owner *owner)
{
	int ret;

	if (!addr || len == 0 || (uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	ret = ensure_handler();
	if (ret)
		return ret;
	for (unsigned i = 0; i < UVN_MEM_GUARD_SLOTS; i++) {
		struct slot *s = &slots[i];
		unsigned st = SLOT_FREE, hi;

		if (!atomic_compare_exchange_strong_explicit(&s->state, &st, SLOT_CLAIMED,
							     memory_order_acquire, memory_order_relaxed))
			continue;
		atomic_store_explicit(&s->start, (uintptr_t)addr, memory_order_relaxed);
		atomic_store_explicit(&s->len, len, memory_order_relaxed);
		atomic_store_explicit(&s->owner, owner, memory_order_relaxed);
		hi = atomic_load_explicit(&slots_hi, memory_order_relaxed);
		while (hi < i + 1 &&
		       !atomic_compare_exchange_weak_explicit(&slots_hi, &hi, i + 1, memory_order_release,
							      memory_order_relaxed))
			;
		/* Fields first, then the state that makes the handler read them. */
		atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_release);
		return (int)i + 1;
	}
	return -ENOSPC;
}

static struct slot *slot_of(int id)
{
	return id > 0 && (unsigned)id <= UVN_MEM_GUARD_SLOTS ? &slots[id - 1] : NULL;
}

void uvn_mem_guard_del(int id)
{
	struct slot *s = slot_of(id);

	if (s)
		atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
}

void uvn_mem_guard_set_owner(int id, struct uvn_mem_owner *owner)
{
	struct slot *s = slot_of(id);

	if (!s)
		return;
	atomic_store_explicit(&s->owner, owner, memory_order_release);
	/* Faulted before anyone owned it: the new owner must still hear. */
	if (owner && atomic_load_explicit(&s->state, memory_order_acquire) >= SLOT_REPLACING)
		notify(owner);
}

bool uvn_mem_guard_faulted(int id)
{
	struct slot *s = slot_of(id);

	return s && atomic_load_explicit(&s->state, memory_order_acquire) >= SLOT_REPLACING;
}

uint64_t uvn_mem_guard_faults_total(void)
{
	return atomic_load_explicit(&faults_total, memory_order_relaxed);
}

unsigned uvn_mem_guard_slots_used(void)
{
	unsigned n = 0, hi = atomic_load_explicit(&slots_hi, memory_order_acquire);

	for (unsigned i = 0; i < hi; i++)
		n += atomic_load_explicit(&slots[i].state, memory_order_relaxed) != SLOT_FREE;
	return n;
}

/* ---------------------------------------------------------------- owners */

int uvn_mem_owner_init(struct uvn_mem_owner *o)
{
	atomic_init(&o->faults, 0);
	o->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return o->efd < 0 ? -errno : 0;
}

void uvn_mem_owner_fini(struct uvn_mem_owner *o)
{
	if (o->efd >= 0)
		close(o->efd);
	o->efd = -1;
}

/* ------------------------------------------------------ guarded mappings */

int uvn_mem_map_guarded(int fd, uint64_t offset, size_t len, struct uvn_mem_owner *owner, void **out)
{
	void *p;
	int id;

	*out = NULL;
	if (len == 0 || offset > (uint64_t)INT64_MAX)
		return -EINVAL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
	if (p == MAP_FAILED)
		return -errno;
	id = uvn_mem_guard_add(p, len, owner);
	if (id < 0) {
		munmap(p, len);
		return id;
	}
	*out = p;
	return 0;
}

void uvn_mem_unmap_guarded(void *p, size_t len)
{
	unsigned hi = atomic_load_explicit(&slots_hi, memory_order_acquire);

	if (!p)
		return;
	for (unsigned i = 0; i < hi; i++) {
		struct slot *s = &slots[i];

		if (atomic_load_explicit(&s->state, memory_order_acquire) >= SLOT_LIVE &&
		    atomic_load_explicit(&s->start, memory_order_relaxed) == (uintptr_t)p) {
			uvn_mem_guard_del((int)i + 1);
			break;
		}
	}
	munmap(p, len);
}

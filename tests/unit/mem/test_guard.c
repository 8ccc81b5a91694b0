/* SPDX-License-Identifier: MIT */
/*
 * The SIGBUS guard (issue 12, finding 6): a fault in a registered mapping
 * is survived and reported to its owner (count, eventfd, the table's
 * faulted query); a SIGBUS anywhere else still kills, or reaches the
 * handler installed before ours; unregistering leaves no slot behind.
 * Deaths are watched in forked children.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem/mem.h"

#define KB 1024ull

static int make_memfd(uint64_t size)
{
	int fd = memfd_create("test-guard", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static uint8_t peek(const void *p)
{
	return *(const volatile uint8_t *)p;
}

static void poke(void *p, uint8_t v)
{
	*(volatile uint8_t *)p = v;
}

/* The eventfd's counter, or 0 if it is not readable. */
static uint64_t drain(int efd)
{
	uint64_t v = 0;

	if (read(efd, &v, sizeof(v)) != sizeof(v)) {
		assert_int_equal(errno, EAGAIN);
		return 0;
	}
	return v;
}

static int map_region(struct uvn_mem *m, uint64_t gpa, uint64_t size, struct uvn_mem_owner *o,
		      int *guard)
{
	struct uvn_mem_region_desc d = { .gpa = gpa, .size = size, .uva = gpa };
	struct uvn_mem_region r;
	int fd = make_memfd(size);

	assert_int_equal(o ? uvn_mem_region_map_owned(&d, fd, o, &r) : uvn_mem_region_map(&d, fd, &r),
			 0);
	assert_true(r.guard > 0);
	if (guard)
		*guard = r.guard;
	assert_int_equal(uvn_mem_insert(m, &r), 0);
	return fd;
}

static void test_owner_told(void **state)
{
	struct uvn_mem *m = uvn_mem_create();
	struct uvn_mem_owner o;
	uint64_t total = uvn_mem_guard_faults_total();
	int fd, other;
	uint8_t *p;

	(void)state;
	assert_int_equal(uvn_mem_owner_init(&o), 0);
	fd = map_region(m, 0x10000, 64 * KB, &o, NULL);
	other = map_region(m, 0x100000, 64 * KB, &o, NULL);
	p = uvn_mem_gpa(m, 0x10000, 64 * KB);
	poke(p, 7);
	assert_false(uvn_mem_faulted(m));
	assert_int_equal(drain(uvn_mem_owner_fd(&o)), 0);

	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(peek(p), 0);
	poke(p + 60 * KB, 1); /* the whole mapping was replaced: no second fault */
	assert_true(uvn_mem_faulted(m));
	assert_int_equal(uvn_mem_owner_faults(&o), 1);
	assert_int_equal(drain(uvn_mem_owner_fd(&o)), 1);
	assert_int_equal(uvn_mem_guard_faults_total(), total + 1);
	/* The other region still is the guest's. */
	poke(uvn_mem_gpa(m, 0x100000, 1), 9);
	assert_int_equal(pread(other, p, 1, 0), 1);
	assert_int_equal(*p, 9);

	uvn_mem_destroy(m);
	uvn_mem_owner_fini(&o);
	close(fd);
	close(other);
}

/* A region mapped before its owner is known: named later, the owner still hears. */
static void test_owner_named_later(void **state)
{
	struct uvn_mem *m = uvn_mem_create();
	struct uvn_mem_owner o;
	int guard, fd;

	(void)state;
	assert_int_equal(uvn_mem_owner_init(&o), 0);
	fd = map_region(m, 0x10000, 16 * KB, NULL, &guard);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(peek(uvn_mem_gpa(m, 0x10000, 1)), 0);
	assert_true(uvn_mem_faulted(m));
	assert_int_equal(drain(uvn_mem_owner_fd(&o)), 0);
	uvn_mem_guard_set_owner(guard, &o);
	assert_int_equal(uvn_mem_owner_faults(&o), 1);
	assert_int_equal(drain(uvn_mem_owner_fd(&o)), 1);
	uvn_mem_destroy(m);
	uvn_mem_owner_fini(&o);
	close(fd);
}

/* The dirty log's kind of mapping: atomic ORs into a shrunk file. */
static void test_log_mapping(void **state)
{
	unsigned used = uvn_mem_guard_slots_used();
	struct uvn_mem_owner o;
	int fd = make_memfd(16 * KB);
	_Atomic uint8_t *bits;
	void *p;

	(void)state;
	assert_int_equal(uvn_mem_owner_init(&o), 0);
	assert_int_equal(uvn_mem_map_guarded(fd, 4 * KB, 8 * KB, &o, &p), 0);
	assert_int_equal(uvn_mem_guard_slots_used(), used + 1);
	bits = p;
	atomic_fetch_or(&bits[5], 1);
	assert_int_equal(ftruncate(fd, 4 * KB), 0);
	atomic_fetch_or(&bits[8 * KB - 1], 2);
	assert_int_equal(atomic_load(&bits[8 * KB - 1]), 2);
	assert_int_equal(uvn_mem_owner_faults(&o), 1);
	assert_int_equal(drain(uvn_mem_owner_fd(&o)), 1);
	uvn_mem_unmap_guarded(p, 8 * KB);
	assert_int_equal(uvn_mem_guard_slots_used(), used);
	/* Errors map nothing and take no slot. */
	assert_int_equal(uvn_mem_map_guarded(-1, 0, 4 * KB, &o, &p), -EBADF);
	assert_null(p);
	assert_int_equal(uvn_mem_map_guarded(fd, 0, 0, &o, &p), -EINVAL);
	assert_int_equal(uvn_mem_guard_slots_used(), used);
	uvn_mem_owner_fini(&o);
	close(fd);
}

/* Every way out of a table unregisters; a full registry refuses cleanly. */
static void test_slots(void **state)
{
	unsigned used = uvn_mem_guard_slots_used(), n = 0;
	struct uvn_mem *m = uvn_mem_create();
	struct uvn_mem_region r;
	struct uvn_mem_region_desc d = { .gpa = 0, .size = 4 * KB };
	static int ids[UVN_MEM_GUARD_SLOTS];
	int fds[UVN_MEM_MAX_REGIONS], fd = make_memfd(4 * KB), id;
	void *anon;

	(void)state;
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++)
		fds[i] = map_region(m, (i + 1) * 0x10000, 4 * KB, NULL, NULL);
	assert_int_equal(uvn_mem_guard_slots_used(), used + UVN_MEM_MAX_REGIONS);
	uvn_mem_take(m, 3, &r);
	uvn_mem_region_unmap(&r);
	assert_int_equal(r.guard, 0);
	assert_int_equal(uvn_mem_guard_slots_used(), used + UVN_MEM_MAX_REGIONS - 1);
	uvn_mem_clear(m);
	assert_int_equal(uvn_mem_guard_slots_used(), used);

	anon = mmap(NULL, 4 * KB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);
	while ((id = uvn_mem_guard_add(anon, 4 * KB, NULL)) > 0)
		ids[n++] = id;
	assert_int_equal(id, -ENOSPC);
	assert_int_equal(n, UVN_MEM_GUARD_SLOTS - used);
	/* Full: a region cannot be mapped unguarded, and says why. */
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), -ENOSPC);
	assert_non_null(strstr(uvn_mem_map_hint(-ENOSPC), "guard"));
	while (n)
		uvn_mem_guard_del(ids[--n]);
	assert_int_equal(uvn_mem_guard_slots_used(), used);
	assert_int_equal(uvn_mem_region_map(&d, fd, &r), 0);
	uvn_mem_region_unmap(&r);
	assert_int_equal(uvn_mem_guard_add(anon, 0, NULL), -EINVAL);
	munmap(anon, 4 * KB);

	uvn_mem_destroy(m);
	for (unsigned i = 0; i < UVN_MEM_MAX_REGIONS; i++)
		close(fds[i]);
	close(fd);
}

/* ------------------------------------------------------------ in a child */

/* Run @fn in a child with SIGBUS at its default (not the test framework's
 * handler) and no core dump; @return its wait status. */
static int in_child(void (*fn)(void))
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_DUMPABLE, 0);
		sigaction(SIGBUS, &dfl, NULL);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void assert_killed_by_sigbus(int status)
{
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
}

/* A shrunk memfd mapped shared at @at (or anywhere); touching it faults. */
static uint8_t *shrunk_mapping(void *at)
{
	int fd = make_memfd(16 * KB);
	uint8_t *p = mmap(at, 16 * KB, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);

	if (p == MAP_FAILED || ftruncate(fd, 0))
		_exit(3);
	close(fd);
	return p;
}

/* A guarded mapping, so that the handler is installed. */
static void *guarded(void)
{
	int fd = make_memfd(16 * KB);
	void *p;

	if (uvn_mem_map_guarded(fd, 0, 16 * KB, NULL, &p))
		_exit(2);
	close(fd);
	return p;
}

static void foreign_fault(void)
{
	uint8_t *p;

	guarded();
	p = shrunk_mapping(NULL);
	poke(p, 1);
}

static void stale_range_fault(void)
{
	void *p = guarded();
	uint8_t *q;

	uvn_mem_unmap_guarded(p, 16 * KB);
	/* The range is free again and somebody else maps a file there. */
	q = shrunk_mapping(p);
	poke(q, 1);
}

static void sent_sigbus(void)
{
	guarded();
	raise(SIGBUS);
}

static void test_other_sigbus_kills(void **state)
{
	(void)state;
	assert_killed_by_sigbus(in_child(foreign_fault));
	assert_killed_by_sigbus(in_child(stale_range_fault));
	assert_killed_by_sigbus(in_child(sent_sigbus));
}

static void earlier_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	_exit(si->si_code > 0 ? 42 : 43);
}

/* A handler installed before ours (a sanitizer's) still gets the faults that are not ours. */
static void chained(void)
{
	struct sigaction sa = { .sa_sigaction = earlier_handler, .sa_flags = SA_SIGINFO };
	uint8_t *p;

	sigaction(SIGBUS, &sa, NULL);
	guarded();
	p = shrunk_mapping(NULL);
	poke(p, 1);
	_exit(5);
}

static void ours_first(void)
{
	struct sigaction sa = { .sa_sigaction = earlier_handler, .sa_flags = SA_SIGINFO };
	struct uvn_mem_owner o;
	int fd = make_memfd(16 * KB);
	uint8_t *p;

	sigaction(SIGBUS, &sa, NULL);
	if (uvn_mem_owner_init(&o) || uvn_mem_map_guarded(fd, 0, 16 * KB, &o, (void **)&p))
		_exit(2);
	if (ftruncate(fd, 0))
		_exit(3);
	poke(p + 8 * KB, 1);
	_exit(uvn_mem_owner_faults(&o) == 1 ? 0 : 6);
}

static void test_chains_to_earlier_handler(void **state)
{
	int status;

	(void)state;
	status = in_child(chained);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 42);
	status = in_child(ours_first);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_told),
		cmocka_unit_test(test_owner_named_later),
		cmocka_unit_test(test_log_mapping),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_other_sigbus_kills),
		cmocka_unit_test(test_chains_to_earlier_handler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

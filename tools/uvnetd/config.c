/* SPDX-License-Identifier: MIT */
/*
 * uvnetd's config file (--config FILE), written back by `uvnetd ctl save`
 * and read again on SIGHUP.
 *
 * One option a line, the long option's name and its value after a space
 * (a flag alone); `#` starts a comment line; blank lines are skipped:
 *
 *   port vhost-user:/run/uvnetd/vm1.sock,name=vm1
 *   cpus 0
 *   poll
 *
 * The value is the rest of the line, spaces inside it kept, around it cut.
 *
 * A reload applies the ports by name: gone ones are removed, new ones
 * added, one whose spec changed is made again; the others are left alone
 * (their guests stay connected). Zero-copy changes live, as `set zerocopy`
 * does; any other option that changed is logged as needing a restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef UVNETD_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "ctl_parse.h"
#include "net/device/netdev.h"
#include "util/log.h"
#include "uvnetd.h"

#define CONFIG_MAX (1 << 20) /* a config file larger than this is a mistake */
#define BLANKS " \t\r"

#ifdef UVNETD_HAVE_SYSTEMD
void uvnetd_notify(const char *state)
{
	sd_notify(0, state);
}
#else
void uvnetd_notify(const char *state)
{
	(void)state;
}
#endif

/* The whole file, NUL-terminated, or NULL with errno set. */
static char *slurp(const char *path, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *buf;
	ssize_t n;

	if (fd < 0)
		return NULL;
	buf = malloc(CONFIG_MAX + 1);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	while ((n = read(fd, buf + len, CONFIG_MAX + 1 - len)) > 0 && (len += (size_t)n) <= CONFIG_MAX)
		;
	close(fd);
	if (n < 0 || len > CONFIG_MAX) {
		free(buf);
		errno = n < 0 ? errno : EFBIG;
		return NULL;
	}
	buf[len] = 0;
	*lenp = len;
	return buf;
}

static int config_line(struct uvnetd_opts *o, const char *path, unsigned ln, char *s)
{
	char where[300], *key, *val;
	size_t len;
	int id;

	s += strspn(s, BLANKS);
	len = strlen(s);
	while (len && strchr(BLANKS, s[len - 1]))
		s[--len] = 0;
	if (!*s || *s == '#')
		return 0;
	snprintf(where, sizeof(where), "%s:%u: ", path, ln);
	key = s;
	val = s + strcspn(s, BLANKS);
	if (*val) {
		*val++ = 0;
		val += strspn(val, BLANKS);
	}
	if (!strcmp(key, "config")) {
		uvnetd_say("%sconfig: a config file cannot name another", where);
		return -1;
	}
	id = uvnetd_opt_find(key);
	if (id < 0) {
		uvnetd_say("%sunknown key '%s' (the keys are uvnetd's long options)", where, key);
		return -1;
	}
	if (uvnetd_opt_is_flag(id) && *val) {
		uvnetd_say("%s%s takes no value", where, key);
		return -1;
	}
	if (!uvnetd_opt_is_flag(id) && !*val) {
		uvnetd_say("%s%s needs a value", where, key);
		return -1;
	}
	return uvnetd_opt_set(o, id, uvnetd_opt_is_flag(id) ? NULL : val, where, ln);
}

int uvnetd_config_read(const char *path, struct uvnetd_opts *o)
{
	size_t len = 0;
	char *text = slurp(path, &len), *line, *next;
	unsigned ln = 0;

	if (!text) {
		uvnetd_say("config %s: %s", path, strerror(errno));
		return -1;
	}
	if (strlen(text) != len) {
		uvnetd_say("config %s: a NUL byte in it: not a text file", path);
		free(text);
		return -1;
	}
	free(o->text);
	o->text = text;
	for (line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		ln++;
		if (config_line(o, path, ln, line))
			return -1;
	}
	return 0;
}

/* The running configuration as a config file. */
static void write_config(struct uvnetd *d, FILE *f, unsigned *nports)
{
	const struct uvnetd_opts *o = &d->o;

	fputs("# uvnetd configuration (uvnetd(8), CONFIGURATION FILE): one option a line,\n"
	      "# its long name and its value. Written by `uvnetd ctl save`.\n", f);
	for (int id = 0; id < UVNETD_OPT_N; id++) {
		if (id == UVNETD_OPT_PORT || id == UVNETD_OPT_FDB)
			continue;
		if (id == UVNETD_OPT_ZC) {
			/* as it is now: `set zerocopy` and reloads change it */
			if (o->given[id] || o->zerocopy != UVN_ZC_AUTO)
				fprintf(f, "zerocopy %s\n", uvnetd_ctl_zc_names[o->zerocopy]);
		} else if (o->given[id] && uvnetd_opt_is_flag(id)) {
			fprintf(f, "%s\n", uvnetd_opt_names[id]);
		} else if (o->given[id]) {
			fprintf(f, "%s %s\n", uvnetd_opt_names[id], o->given[id]);
		}
	}
	*nports = 0;
	for (unsigned i = 0; i < d->fwd.nports; i++) {
		struct uvn_port *p = d->fwd.ports[i];

		if (p && d->spec[p->id]) {
			fprintf(f, "port %s\n", d->spec[p->id]);
			++*nports;
		}
	}
	uvnetd_fdb_save(d, f);
}

int uvnetd_config_save(struct uvnetd *d, const char *path, char *err, size_t n)
{
	char tmp[4096];
	unsigned nports = 0;
	struct stat st;
	FILE *f;
	int fd, r = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		snprintf(err, n, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	/* Beside the file, so the rename replaces it in one step. */
	fd = mkstemp(tmp);
	if (fd < 0) {
		r = -errno;
		snprintf(err, n, "cannot create a file beside %s: %s", path, strerror(-r));
		return r;
	}
	/* The file keeps its mode; a new one gets 0644 (mkstemp's is 0600). */
	fchmod(fd, stat(path, &st) ? 0644 : st.st_mode & 07777);
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
	} else {
		write_config(d, f, &nports);
		if (fflush(f) || fsync(fileno(f)))
			r = -errno;
		if (fclose(f) && !r)
			r = -errno;
	}
	if (!r && rename(tmp, path))
		r = -errno;
	if (r) {
		unlink(tmp);
		snprintf(err, n, "cannot write %s: %s", path, strerror(-r));
		return r;
	}
	UVN_INFO("configuration saved to %s (%u ports)", path, nports);
	return (int)nports;
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Options a running uvnetd keeps: say which changed. */
static const char *shown(int id, const char *given)
{
	if (!given)
		return "the default";
	return uvnetd_opt_is_flag(id) ? "set" : given;
}

static void restart_needed(const struct uvnetd_opts *cur, const struct uvnetd_opts *n)
{
	for (int id = 0; id < UVNETD_OPT_N; id++)
		if (id != UVNETD_OPT_PORT && id != UVNETD_OPT_FDB && id != UVNETD_OPT_ZC &&
		    !same(cur->given[id], n->given[id]))
			UVN_WARN("reload: %s changed to %s: needs a restart (running with %s)",
				 uvnetd_opt_names[id], shown(id, n->given[id]), shown(id, cur->given[id]));
}

/* Is the port called @name wanted by @n, and with which spec? */
static const char *wanted(const struct uvnetd_opts *n, const char *name)
{
	char other[sizeof(((struct uvn_port *)0)->name)];

	for (unsigned i = 0; i < n->nports; i++)
		if (!uvn_port_spec_name(n->port_specs[i], other, sizeof(other)) && !strcmp(other, name))
			return n->port_specs[i];
	return NULL;
}

static void apply_ports(struct uvnetd *d, const struct uvnetd_opts *n)
{
	char gone[UVNETD_MAX_PORTS][sizeof(((struct uvn_port *)0)->name)];
	unsigned ngone = 0, added = 0, removed = 0, failed = 0;

	/* First out, so a port made again finds its socket path free. */
	for (unsigned i = 0; i < d->fwd.nports; i++) {
		struct uvn_port *p = d->fwd.ports[i];
		const char *spec = p ? wanted(n, p->name) : NULL;

		if (p && (!spec || !same(spec, d->spec[p->id])))
			snprintf(gone[ngone++], sizeof(gone[0]), "%s", p->name);
	}
	for (unsigned i = 0; i < ngone; i++) {
		if (uvnetd_port_del(d, gone[i]))
			failed++;
		else
			removed++;
	}
	for (unsigned i = 0; i < n->nports; i++) {
		char name[sizeof(gone[0])];

		if (uvn_port_spec_name(n->port_specs[i], name, sizeof(name)) || uvnetd_port_find(d, name))
			continue;
		if (uvnetd_port_add(d, n->port_specs[i]))
			failed++;
		else
			added++;
	}
	UVN_INFO("reload: %u ports added, %u removed (a changed port is both), %u failed",
		 added, removed, failed);
}

void uvnetd_reload(struct uvnetd *d)
{
	struct uvnetd_opts n;

	if (!d->o.config) {
		UVN_WARN("SIGHUP: uvnetd has no --config file: nothing to reload");
		return;
	}
	uvnetd_notify("RELOADING=1");
	UVN_INFO("reload: reading %s", d->o.config);
	if (uvnetd_reparse(&d->o, &n)) {
		UVN_ERR("reload: %s not applied, nothing changed", d->o.config);
	} else {
		restart_needed(&d->o, &n);
		if (n.zerocopy != d->o.zerocopy && !uvnetd_set_zerocopy(d, n.zerocopy))
			UVN_INFO("reload: zerocopy %s", uvnetd_ctl_zc_names[n.zerocopy]);
		apply_ports(d, &n);
		uvnetd_fdb_apply(d, &n, true);
		uvnetd_opts_free(&n);
	}
	uvnetd_notify("READY=1");
}

/* SPDX-License-Identifier: MIT */
/*
 * Static FDB entries as configuration: `fdb-static MAC port=NAME [vlan=N]`
 * on the command line or in the config file (the words `uvnetd ctl fdb
 * add` takes). They are added once the ports exist, written back by
 * `save` (with those `fdb add` made since), and a reload makes the static
 * entries the file's: the others go, the file's are added again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl_parse.h"
#include "util/log.h"
#include "util/sys.h"
#include "uvnetd.h"

int uvnetd_fdb_spec(const char *spec, char *buf, size_t n, struct uvnetd_ctl_cmd *cmd)
{
	if ((size_t)snprintf(buf, n, "fdb add %s", spec) >= n || uvnetd_ctl_parse(buf, cmd) ||
	    cmd->op != UVNETD_CTL_FDB_ADD)
		return -EINVAL;
	return 0;
}

int uvnetd_fdb_add(struct uvnetd *d, const struct uvnetd_ctl_cmd *cmd, char *err, size_t n)
{
	struct uvn_port *p = uvnetd_port_find(d, cmd->port);
	int r;

	if (!p)
		return snprintf(err, n, "no port '%s' (show ports lists them)", cmd->port), -ENOENT;
	/* Floods and lookups skip group addresses, and a frame goes only to
	 * ports of its VLAN: such entries would never be used. */
	if (cmd->mac >> 40 & 1)
		return snprintf(err, n, "a static entry is for a unicast address (its first byte even)"),
		       -EINVAL;
	if (!uvn_fwd_port_in_vlan(p, cmd->vlan))
		return snprintf(err, n, "port %s is not in vlan %u (show ports has its VLANs)", p->name,
				cmd->vlan), -EINVAL;
	if (!uvnetd_quiesce(d)) {
		uvnetd_resume(d);
		return snprintf(err, n, "uvnetd is stopping"), -ECANCELED;
	}
	r = uvn_fdb_add_static(&d->fwd.fdb, uvn_fdb_key(cmd->vlan, cmd->mac), p->id, uvn_now_ns());
	uvnetd_resume(d);
	if (r)
		snprintf(err, n, "the FDB has no room for it (too many addresses hash alike)");
	return r;
}

/* Is @key among the @n keys of @keys? */
static bool configured(const uint64_t *keys, unsigned n, uint64_t key)
{
	for (unsigned i = 0; i < n; i++)
		if (keys[i] == key)
			return true;
	return false;
}

/* Remove the static entries @o does not have. @return how many */
static unsigned drop_others(struct uvnetd *d, const struct uvnetd_opts *o)
{
	uint64_t keys[UVNETD_MAX_FDB_STATIC];
	struct uvn_fdb *fdb = &d->fwd.fdb;
	unsigned gone = 0, n = 0;

	/* Parsed before the workers park: they wait only for the scan. */
	for (unsigned i = 0; i < o->nfdb; i++) {
		struct uvnetd_ctl_cmd c;
		char buf[256];

		if (!uvnetd_fdb_spec(o->fdb_specs[i], buf, sizeof(buf), &c))
			keys[n++] = uvn_fdb_key(c.vlan, c.mac);
	}
	if (!uvnetd_quiesce(d)) {
		uvnetd_resume(d);
		return 0;
	}
	for (unsigned i = 0; i <= fdb->mask; i++) {
		struct uvn_fdb_info e;

		if (uvn_fdb_get(fdb, i, uvn_now_ns(), &e) && e.is_static && !configured(keys, n, e.key))
			gone += !uvn_fdb_del(fdb, e.key, uvn_now_ns());
	}
	uvnetd_resume(d);
	return gone;
}

int uvnetd_fdb_apply(struct uvnetd *d, const struct uvnetd_opts *o, bool reload)
{
	unsigned gone = reload ? drop_others(d, o) : 0, failed = 0;

	for (unsigned i = 0; i < o->nfdb; i++) {
		struct uvnetd_ctl_cmd c;
		char buf[256], err[160];

		if (uvnetd_fdb_spec(o->fdb_specs[i], buf, sizeof(buf), &c) ||
		    uvnetd_fdb_add(d, &c, err, sizeof(err))) {
			UVN_ERR("%sfdb-static %s: %s", reload ? "reload: " : "", o->fdb_specs[i],
				err);
			failed++;
		}
	}
	if (reload && (o->nfdb || gone))
		UVN_INFO("reload: %u static FDB entries set, %u removed, %u failed", o->nfdb - failed,
			 gone, failed);
	return failed ? -EINVAL : 0;
}

void uvnetd_fdb_save(struct uvnetd *d, FILE *f)
{
	const struct uvn_fdb *fdb = &d->fwd.fdb;

	for (unsigned i = 0; i <= fdb->mask; i++) {
		struct uvn_fdb_info e;
		uint64_t mac;

		if (!uvn_fdb_get(fdb, i, uvn_now_ns(), &e) || !e.is_static || e.port >= d->fwd.nports ||
		    !d->fwd.ports[e.port])
			continue;
		/* A line is cut into words: a name with a blank could not be read back. */
		if (strpbrk(d->fwd.ports[e.port]->name, " \t")) {
			UVN_WARN("save: a static FDB entry on port '%s' is not saved (a blank in its name)",
				 d->fwd.ports[e.port]->name);
			continue;
		}
		mac = uvn_fdb_key_mac(e.key);
		fprintf(f, "fdb-static %02x:%02x:%02x:%02x:%02x:%02x port=%s vlan=%u\n",
			(unsigned)(mac >> 40) & 0xff, (unsigned)(mac >> 32) & 0xff,
			(unsigned)(mac >> 24) & 0xff, (unsigned)(mac >> 16) & 0xff,
			(unsigned)(mac >> 8) & 0xff, (unsigned)mac & 0xff, d->fwd.ports[e.port]->name,
			uvn_fdb_key_vlan(e.key));
	}
}

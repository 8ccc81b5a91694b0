/* SPDX-License-Identifier: MIT */
/*
 * uvnetd's ports by name, added at start-up (--port) and at run time
 * (ctl add-port), removed at run time (ctl del-port). Creating or
 * destroying a port happens on the control thread; only the change of the
 * tables the workers read (the forwarding slots, the queues each worker
 * serves) parks them, and for no longer than that. A removed port's slot
 * (its id, the last byte of its MAC) is reused by the next port added.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "uvnetd.h"

struct uvn_port *uvnetd_port_find(struct uvnetd *d, const char *name)
{
	for (unsigned i = 0; i < d->fwd.nports; i++)
		if (d->fwd.ports[i] && !strcmp(d->fwd.ports[i]->name, name))
			return d->fwd.ports[i];
	return NULL;
}

/* Put @p in a free slot and give its queues to the workers. */
static int attach(struct uvnetd *d, struct uvn_port *p)
{
	int r;

	if (!uvnetd_quiesce(d)) {
		uvnetd_resume(d);
		return -ECANCELED;
	}
	r = uvn_fwd_add_port(&d->fwd, p);
	if (!r) {
		/* locally administered, unique per slot: 02:75:76:00:00:<id> */
		memcpy(p->mac, "\x02\x75\x76\x00\x00", 5);
		p->mac[5] = (uint8_t)p->id;
		memset(&d->last[p->id], 0, sizeof(d->last[p->id]));
		if (d->nworkers)
			uvnetd_assign(d);
	}
	uvnetd_resume(d);
	return r;
}

int uvnetd_port_add(struct uvnetd *d, const char *spec)
{
	char *copy = strdup(spec); /* for save and reload: the port as it was given */
	struct uvn_port *p;
	int r = copy ? uvn_port_create(spec, &d->env, &p) : -ENOMEM;

	if (r) {
		free(copy);
		return r;
	}
	if (uvnetd_port_find(d, p->name)) {
		UVN_ERR("port '%s': a port of that name exists", p->name);
		r = -EEXIST;
	} else {
		r = attach(d, p);
		if (r == -ENOSPC)
			UVN_ERR("port '%s': all %d ports in use", p->name, UVNETD_MAX_PORTS);
	}
	if (r) {
		p->ops->destroy(p);
		free(copy);
		return r;
	}
	free(d->spec[p->id]);
	d->spec[p->id] = copy;
	UVN_INFO("port %s added (%s)", p->name, spec);
	return 0;
}

int uvnetd_port_del(struct uvnetd *d, const char *name)
{
	struct uvn_port *p = uvnetd_port_find(d, name);

	if (!p)
		return -ENOENT;
	if (!uvnetd_quiesce(d)) {
		uvnetd_resume(d);
		return -ECANCELED;
	}
	/* Out of the tables, its queues taken from the workers, then gone:
	 * nothing a worker holds refers to it once they run again. */
	uvn_fwd_del_port(&d->fwd, p);
	uvnetd_assign(d);
	free(d->spec[p->id]);
	d->spec[p->id] = NULL;
	p->ops->destroy(p);
	uvnetd_resume(d);
	UVN_INFO("port %s removed", name);
	return 0;
}

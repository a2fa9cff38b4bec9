/* dump_cuda.c — reads the CUDA agent's in-flight table (gtcupti_inflight.h) out of a process:
 * the whole table twice, keeping the slots whose seqlock was even and unchanged. */
#include "dump_cuda.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gtcupti_inflight.h"

/* "cudaStreamSynchronize_v3020" -> "cudaStreamSynchronize" */
static void strip_version(char *name)
{
	char *v = strstr(name, "_v");
	size_t i;

	if (!v || !v[2])
		return;
	for (i = 2; v[i]; i++)
		if (v[i] < '0' || v[i] > '9')
			return;
	*v = 0;
}

static void read_name(rec_procmem *mem, uint64_t addr, char *buf, size_t cap)
{
	size_t len = cap - 1;

	buf[0] = 0;
	if (!addr)
		return;
	/* the string may end near a page end: shorter reads until one works */
	while (len >= 8 && rec_procmem_read(mem, addr, buf, len) < 0)
		len /= 2;
	if (len < 8) {
		buf[0] = 0;
		return;
	}
	buf[len] = 0;
	strip_version(buf);
}

int rec_dcuda_read(pid_t pid, rec_as *as, rec_procmem *mem, rec_dcuda_call **out, uint64_t *res_ns)
{
	struct gtcupti_inflight *a = NULL, *b = NULL;
	uint64_t start, addr;
	const char *path;
	int rc = REC_DCUDA_BAD, n = 0;
	uint32_t i;

	*out = NULL;
	*res_ns = 0;
	if (!rec_as_find_module(as, "libgtcupti.so", &start, &path))
		return rec_as_find_module(as, "libcuda.so", &start, &path) ? REC_DCUDA_NO_AGENT : REC_DCUDA_NO_CUDA;
	if (rec_as_symbol_addr(as, path, GTCUPTI_INFLIGHT_SYMBOL, &addr) < 0)
		return REC_DCUDA_BAD; /* an agent without the table (older than the table) */
	a = malloc(sizeof(*a));
	b = malloc(sizeof(*b));
	if (!a || !b)
		goto out;
	if (rec_procmem_read(mem, addr, a, sizeof(*a)) < 0 || rec_procmem_read(mem, addr, b, sizeof(*b)) < 0)
		goto out;
	if (memcmp(a->magic, GTCUPTI_INFLIGHT_MAGIC, sizeof(a->magic)) != 0 || a->version != GTCUPTI_INFLIGHT_VERSION ||
	    a->slot_size != sizeof(a->slot[0]) || a->header_size != offsetof(struct gtcupti_inflight, slot) ||
	    a->n_slots > GTCUPTI_INFLIGHT_SLOTS)
		goto out;
	*res_ns = a->clock_res_ns;
	if (!(a->flags & GTCUPTI_INFLIGHT_ACTIVE) || a->pid != (uint32_t)pid) {
		rc = REC_DCUDA_INACTIVE;
		goto out;
	}
	*out = calloc(a->n_slots ? a->n_slots : 1, sizeof(**out));
	if (!*out)
		goto out;
	for (i = 0; i < a->n_slots; i++) {
		const struct gtcupti_inflight_slot *s = &a->slot[i], *t = &b->slot[i];
		rec_dcuda_call *c;

		/* stable: even and unchanged between the two reads; a call that started or ended in
		 * between is not reported (it is not one a dump is looking for) */
		if ((s->seq & 1) || s->seq != t->seq || !s->tid || !s->cbid)
			continue;
		c = &(*out)[n++];
		c->tid = s->tid;
		c->cbid = s->cbid;
		c->domain = s->domain;
		c->correlation = s->correlation;
		c->depth = s->depth;
		c->start_ns = s->start_ns;
		c->n_calls = s->n_calls;
		read_name(mem, s->name_addr, c->name, sizeof(c->name));
	}
	rc = n;
out:
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	free(a);
	free(b);
	return rc;
}

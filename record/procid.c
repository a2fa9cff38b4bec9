/* procid.c — a job's process identities (rank, role, device visibility) from /proc/PID/environ. */
#include "procid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "procfs.h"
#include "rec_err.h"

/* torchrun/torchelastic, plain torch.distributed launchers, Slurm, Open MPI, MPICH/PMI, and ours */
const rec_procid_var rec_procid_vars[] = {
	{ "RANK", "rank" },
	{ "LOCAL_RANK", "local_rank" },
	{ "WORLD_SIZE", "world_size" },
	{ "LOCAL_WORLD_SIZE", "local_world_size" },
	{ "GROUP_RANK", "group_rank" },
	{ "ROLE_RANK", "role_rank" },
	{ "ROLE_NAME", "role_name" },
	{ "MASTER_ADDR", "master_addr" },
	{ "GT_ROLE", "role" },
	{ "CUDA_VISIBLE_DEVICES", "cuda_visible_devices" },
	{ "SLURM_PROCID", "slurm_procid" },
	{ "SLURM_LOCALID", "slurm_localid" },
	{ "OMPI_COMM_WORLD_RANK", "ompi_rank" },
	{ "PMI_RANK", "pmi_rank" },
};
const unsigned rec_procid_n_vars = sizeof(rec_procid_vars) / sizeof(rec_procid_vars[0]);

#define VALUE_MAX 256

typedef struct seen {
	uint32_t pid;
	int clock_known;
	int64_t clock_shift_ns;     /* our CLOCK_MONOTONIC minus the process's */
	uint64_t hash[sizeof(rec_procid_vars) / sizeof(rec_procid_vars[0])]; /* 0: not written */
} seen;

struct rec_procid {
	seen *v;
	size_t n, cap;
	int64_t our_timens_ns;
	int our_timens_known;
};

typedef struct found {
	char value[sizeof(rec_procid_vars) / sizeof(rec_procid_vars[0])][VALUE_MAX];
	int have[sizeof(rec_procid_vars) / sizeof(rec_procid_vars[0])];
} found;

rec_procid *rec_procid_create(void)
{
	rec_procid *p = calloc(1, sizeof(rec_procid));
	if (p)
		p->our_timens_known = rec_procfs_timens_monotonic(0, &p->our_timens_ns) == 0;
	return p;
}

int rec_procid_clock_shift(const rec_procid *p, uint32_t pid, int64_t *shift_ns)
{
	for (size_t i = 0; p && i < p->n; i++)
		if (p->v[i].pid == pid && p->v[i].clock_known) {
			*shift_ns = p->v[i].clock_shift_ns;
			return 0;
		}
	return -ENOENT;
}

void rec_procid_destroy(rec_procid *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

static void on_var(void *ctx, const char *key, const char *value)
{
	found *f = ctx;
	unsigned i;

	for (i = 0; i < rec_procid_n_vars; i++)
		if (strcmp(rec_procid_vars[i].env, key) == 0) {
			snprintf(f->value[i], VALUE_MAX, "%s", value);
			f->have[i] = 1;
		}
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a; never 0 for the strings we hash */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h | 1;
}

static seen *slot(rec_procid *p, uint32_t pid)
{
	size_t i;
	for (i = 0; i < p->n; i++)
		if (p->v[i].pid == pid)
			return &p->v[i];
	if (GT_GROW(p->v, p->cap, p->n + 1) < 0)
		return NULL;
	memset(&p->v[p->n], 0, sizeof(p->v[p->n]));
	p->v[p->n].pid = pid;
	return &p->v[p->n++];
}

int rec_procid_observe(rec_procid *p, gtt_writer *w, const gtt_record *rec)
{
	const char *keys[sizeof(rec_procid_vars) / sizeof(rec_procid_vars[0])];
	found *f = NULL;
	seen *sn = NULL;
	unsigned i;
	int n, written = 0, rc = 0;
	uint32_t pid;

	if (!p || rec->tag != GTT_REC_PROCESS || rec->u.process.event == GTT_PROC_EXIT)
		return 0;
	pid = rec->u.process.pid;
	for (i = 0; i < rec_procid_n_vars; i++)
		keys[i] = rec_procid_vars[i].env;
	if (!(f = calloc(1, sizeof(*f))) || !(sn = slot(p, pid))) {
		rc = -ENOMEM;
		goto out;
	}
	/* its clock, while it is alive (an exec may enter a new time namespace) */
	if (p->our_timens_known) {
		int64_t theirs;
		if (rec_procfs_timens_monotonic((pid_t)pid, &theirs) == 0) {
			sn->clock_known = 1;
			sn->clock_shift_ns = p->our_timens_ns - theirs;
		}
	}
	n = rec_procfs_environ((pid_t)pid, keys, rec_procid_n_vars, on_var, f);
	if (n <= 0)
		goto out; /* gone, unreadable, or nothing of a job: the process simply has no identity */
	for (i = 0; i < rec_procid_n_vars; i++) {
		char key[64];
		gtt_record m;
		uint64_t h;

		if (!f->have[i] || sn->hash[i] == (h = hash_str(f->value[i])))
			continue;
		snprintf(key, sizeof(key), "process.%u.%s", pid, rec_procid_vars[i].key);
		memset(&m, 0, sizeof(m));
		m.tag = GTT_REC_META;
		m.u.meta.key = key;
		m.u.meta.value = f->value[i];
		if ((rc = rec_err_from_gtt(gtt_write(w, &m))) < 0)
			goto out;
		sn->hash[i] = h;
		written++;
	}
	rc = written;
out:
	free(f);
	return rc;
}

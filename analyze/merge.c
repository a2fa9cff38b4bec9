/* merge.c — gt-analyze merge: several traces onto the clock of the first, hosts kept apart. */
#include "merge.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "clockfit.h"
#include "gt_util.h"
#include "gtt.h"
#include "gtt_priv.h" /* gtt_rec_times */
#include "merge_priv.h"

#define BASE_MARGIN_NS (10 * GT_NS_PER_SEC) /* merged times start at least this far from 0 */

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int add_pid(ana_merge_in *in, uint32_t pid)
{
	if (!pid)
		return 0;
	/* cheap dedup of runs; the list is sorted and made distinct after the pass */
	if (in->n_pids && in->pids[in->n_pids - 1] == pid)
		return 0;
	if (GT_GROW(in->pids, in->cap_pids, in->n_pids + 1) < 0)
		return GTT_ENOMEM;
	in->pids[in->n_pids++] = pid;
	if (in->n_pids >= (1u << 16) && (in->n_pids & 0xffff) == 0) { /* keep it bounded */
		size_t k = 0;
		if (in->n_pids > 1)
			qsort(in->pids, in->n_pids, sizeof(uint32_t), u32_cmp);
		for (size_t i = 0; i < in->n_pids; i++)
			if (!k || in->pids[k - 1] != in->pids[i])
				in->pids[k++] = in->pids[i];
		in->n_pids = k;
	}
	return 0;
}

static void meta_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	if (end != v)
		*out = x;
}

static int scan_meta(ana_merge_in *in, const gtt_meta *m, char *err, size_t errlen)
{
	if (strncmp(m->key, "merge.", 6) == 0) {
		snprintf(err, errlen, "%s is itself a merged trace; merge the traces it was made of", in->path);
		return GTT_EINVAL;
	}
	if (!strcmp(m->key, "hostname"))
		snprintf(in->host, sizeof(in->host), "%s", m->value);
	else if (!strcmp(m->key, "boot_id"))
		snprintf(in->boot_id, sizeof(in->boot_id), "%s", m->value);
	else if (!strcmp(m->key, "start_ns"))
		meta_u64(m->value, &in->start_ns);
	else if (!strcmp(m->key, "start_realtime_ns"))
		meta_u64(m->value, &in->start_rt_ns);
	else if (!strcmp(m->key, "timens_monotonic_offset_ns"))
		in->timens_ns = strtoll(m->value, NULL, 10);
	return 0;
}

/* The pids a record names (pid 0 is "none" and stays). */
static int scan_pids(ana_merge_in *in, const gtt_record *r)
{
	int rc = 0;
	switch (r->tag) {
	case GTT_REC_PROCESS: rc = add_pid(in, r->u.process.pid); break;
	case GTT_REC_THREAD: rc = add_pid(in, r->u.thread.pid) ? GTT_ENOMEM : add_pid(in, r->u.thread.tid); break;
	case GTT_REC_SAMPLE: rc = add_pid(in, r->u.sample.pid); break;
	case GTT_REC_CUDA_DEVICE: rc = add_pid(in, r->u.cuda_device.pid); break;
	default: break;
	}
	return rc;
}

/* First pass over one input: clock pairs, host, boot, pids, bounds. */
static int scan(ana_merge_in *in, char *err, size_t errlen)
{
	int e = 0, rc;
	gtt_reader *r = gtt_reader_open(in->path, &e);
	gtt_record rec;

	if (!r) {
		snprintf(err, errlen, "%s: %s", in->path, e == GTT_EIO ? strerror(errno) : gtt_strerror(e));
		return e ? e : GTT_EIO;
	}
	gtt_reader_version(r, &in->major, &in->minor);
	while ((rc = gtt_reader_next(r, &rec)) > 0) {
		uint64_t t0, t1;
		if (rec.tag == GTT_REC_META && (rc = scan_meta(in, &rec.u.meta, err, errlen)) < 0)
			goto out;
		if (rec.tag == GTT_REC_CLOCK) {
			if (GT_GROW(in->pairs, in->cap_pairs, in->n_pairs + 1) < 0) {
				rc = GTT_ENOMEM;
				break;
			}
			in->pairs[in->n_pairs++] = (ana_clock_pair){ rec.u.clock.mono_ns, rec.u.clock.realtime_ns,
			                                             rec.u.clock.uncertainty_ns, 1 };
			if (!in->host[0])
				snprintf(in->host, sizeof(in->host), "%s", rec.u.clock.hostname);
			if (!in->boot_id[0])
				snprintf(in->boot_id, sizeof(in->boot_id), "%s", rec.u.clock.boot_id);
		}
		if ((rc = scan_pids(in, &rec)) < 0)
			break;
		if (gtt_rec_times(&rec, &t0, &t1) && t1 > in->end_ns)
			in->end_ns = t1;
	}
	if (rc < 0 && !err[0])
		snprintf(err, errlen, "%s: %s", in->path, gtt_strerror(rc));
	in->truncated = gtt_reader_truncated(r);
	if (rc == 0 && in->n_pairs == 0 && in->start_ns && in->start_rt_ns) {
		/* a trace from before clock records: its start pair, uncertainty not recorded */
		if (GT_GROW(in->pairs, in->cap_pairs, 1) < 0)
			rc = GTT_ENOMEM;
		else
			in->pairs[in->n_pairs++] = (ana_clock_pair){ in->start_ns, in->start_rt_ns, 0, 0 };
	}
	if (rc == 0 && in->n_pairs == 0) {
		snprintf(err, errlen, "%s: no clock pair and no start_realtime_ns: it cannot be put on another trace's clock",
		         in->path);
		rc = GTT_EINVAL;
	}
	if (rc == 0) {
		size_t k = 0;
		if (in->n_pids > 1)
			qsort(in->pids, in->n_pids, sizeof(uint32_t), u32_cmp);
		for (size_t i = 0; i < in->n_pids; i++)
			if (!k || in->pids[k - 1] != in->pids[i])
				in->pids[k++] = in->pids[i];
		in->n_pids = k;
		rc = ana_clockfit_make(in->pairs, in->n_pairs, &in->fit);
	}
out:
	gtt_reader_close(r);
	return rc;
}

static int pids_meet(const ana_merge_in *a, const ana_merge_in *b)
{
	size_t i = 0, j = 0;
	while (i < a->n_pids && j < b->n_pids) {
		if (a->pids[i] == b->pids[j])
			return 1;
		if (a->pids[i] < b->pids[j])
			i++;
		else
			j++;
	}
	return 0;
}

/* Pid spaces: a trace shares the space of an earlier trace of its boot (one kernel, one pid
 * namespace as far as the traces show) unless their pids meet; every other trace gets its own. */
static void assign_spaces(ana_merge *M)
{
	uint32_t n_spaces = 0;
	for (int i = 0; i < M->n; i++) {
		ana_merge_in *in = &M->in[i];
		int shared = -1;
		for (int j = 0; j < i && shared < 0; j++) {
			int k, clash = 0;
			if (!in->boot_id[0] || strcmp(in->boot_id, M->in[j].boot_id) != 0)
				continue;
			for (k = 0; k < i && !clash; k++)
				clash = M->in[k].space == M->in[j].space && pids_meet(in, &M->in[k]);
			if (!clash)
				shared = j;
		}
		in->space = shared >= 0 ? M->in[shared].space : n_spaces++;
	}
}

/* The shift of trace i at time t onto the reference's clock (without the base). */
int64_t ana_merge_delta_at(const ana_merge *M, const ana_merge_in *in, uint64_t t)
{
	const ana_merge_in *ref = &M->in[0];
	if (in == ref)
		return 0;
	if (in->same_boot)
		return (int64_t)((uint64_t)ref->timens_ns - (uint64_t)in->timens_ns); /* host = trace - timens, on both */
	return ana_clockfit_delta(&in->fit, &ref->fit, t);
}

static void align(ana_merge *M)
{
	ana_merge_in *ref = &M->in[0];
	int64_t lowest = INT64_MAX;

	for (int i = 0; i < M->n; i++) {
		ana_merge_in *in = &M->in[i];
		uint64_t start = in->start_ns ? in->start_ns : in->fit.a_ns;
		in->same_boot = i > 0 && !M->by_realtime && in->boot_id[0] && strcmp(in->boot_id, ref->boot_id) == 0;
		in->rt_delta0_ns = i ? ana_clockfit_delta(&in->fit, &ref->fit, start) : 0;
		in->delta0_ns = ana_merge_delta_at(M, in, start);
		in->err_ns = i ? ana_clockfit_error(&in->fit, &ref->fit) : 0;
		/* one kernel clock, yet the pairs disagree: a trace from a time namespace written
		 * before gt-record said its offset (or a pair of unrecorded uncertainty far off): the
		 * pairs know better than an offset assumed 0 */
		uint64_t apart = (uint64_t)in->rt_delta0_ns - (uint64_t)in->delta0_ns;
		if ((int64_t)apart < 0)
			apart = -apart;
		if (in->same_boot && apart > GT_NS_PER_MS + in->err_ns) {
			in->same_boot = 0;
			in->boot_disagrees = 1;
			in->delta0_ns = in->rt_delta0_ns;
		}
		int64_t at = (int64_t)(start + (uint64_t)in->delta0_ns); /* wraps, never overflows */
		if (at < lowest)
			lowest = at;
	}
	M->base_ns = lowest < (int64_t)BASE_MARGIN_NS ? BASE_MARGIN_NS - (uint64_t)lowest : 0;
}

static void print_alignment(const ana_merge *M, FILE *out)
{
	const ana_merge_in *ref = &M->in[0];
	int any_rt = 0, unstated = 0;
	uint64_t worst = 0;

	fprintf(out, "merged %d traces onto the clock of trace 0 (%s, CLOCK_MONOTONIC%s)\n", M->n, ref->host,
	        M->base_ns ? " plus merge.base_ns" : "");
	fprintf(out, "  %-2s %-24s %-14s %-8s %-6s %-5s %16s %16s %10s  %s\n", "#", "trace", "host", "boot", "format",
	        "pairs", "shift_ns", "by_realtime_ns", "drift_ppm", "how (error)");
	for (int i = 0; i < M->n; i++) {
		const ana_merge_in *in = &M->in[i];
		const char *base = strrchr(in->path, '/');
		char how[320], drift[32];
		uint64_t apart = (uint64_t)in->rt_delta0_ns - (uint64_t)in->delta0_ns;
		if ((int64_t)apart < 0)
			apart = -apart;
		if (i == 0)
			snprintf(how, sizeof(how), "reference");
		else if (in->same_boot)
			snprintf(how, sizeof(how), "same boot: one kernel clock%s (exact; pairs agree within %" PRIu64 " ns)",
			         in->timens_ns != ref->timens_ns ? ", time namespace offsets" : "", apart);
		else
			snprintf(how, sizeof(how), "%srealtime pairs (+- %" PRIu64 " ns%s%s)",
			         in->boot_disagrees ? "same boot, but its kernel clock is off the pairs by more than 1 ms "
			                              "(a time namespace it did not record?): " : "", in->err_ns,
			         in->fit.unstated || ref->fit.unstated ? ", a pair of unrecorded uncertainty" : "",
			         in->fit.n_pairs < 2 ? ", drift unknown: one pair" : "");
		if (in->fit.n_pairs >= 2)
			snprintf(drift, sizeof(drift), "%.3f", in->fit.drift * 1e6);
		else
			snprintf(drift, sizeof(drift), "-");
		fprintf(out, "  %-2d %-24.24s %-14.14s %-8.8s %" PRIu32 ".%-4" PRIu32 " %-5zu %16" PRId64 " %16" PRId64
		        " %10s  %s\n", i, base ? base + 1 : in->path, in->host[0] ? in->host : "?",
		        in->boot_id[0] ? in->boot_id : "?", in->major, in->minor, in->n_pairs, in->delta0_ns,
		        in->rt_delta0_ns, drift, how);
		if (i && !in->same_boot) {
			any_rt = 1;
			unstated |= in->fit.unstated || ref->fit.unstated;
			if (in->err_ns > worst)
				worst = in->err_ns;
		}
		if (in->space)
			fprintf(out, "     its pids are pid + %" PRIu64 " in the merged trace (pid space %u)\n",
			        (uint64_t)in->space * ANA_PID_SPACE, in->space);
	}
	if (any_rt)
		fprintf(out, "estimated alignment error: %" PRIu64 " us from the clock pairs%s, plus the disagreement of the"
		        " hosts' realtime clocks (NTP/PTP), which the traces cannot know\n", (worst + 999) / 1000,
		        unstated ? " (some pairs of unrecorded uncertainty)" : "");
	else
		fprintf(out, "alignment: exact (every trace shares the reference's boot and kernel clock)\n");
}

static int parse(int argc, char **argv, ana_merge *M, const char **out, int *force)
{
	enum { O_FORCE = 0x2001, O_BY_RT };
	static const struct option longs[] = {
		{ "output", required_argument, NULL, 'o' }, { "force", no_argument, NULL, O_FORCE },
		{ "by-realtime", no_argument, NULL, O_BY_RT }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", longs, NULL)) != -1) {
		switch (c) {
		case 'o': *out = optarg; break;
		case O_FORCE: *force = 1; break;
		case O_BY_RT: M->by_realtime = 1; break;
		case 'h':
			printf("usage: gt-analyze merge [OPTIONS] A.gtt B.gtt ... -o JOB.gtt\n\n"
			       "Put the traces of a job's processes or hosts into one trace on the clock of the first:\n"
			       "traces of one boot through the kernel's one CLOCK_MONOTONIC (exact), others through\n"
			       "their realtime clock pairs (the error is stated). Processes of different hosts keep\n"
			       "apart: their pids become pid + K*%u. Every command reads the result.\n\n"
			       "  -o, --output FILE  the merged trace (an existing file is refused without --force)\n"
			       "  --force            replace an existing output file\n"
			       "  --by-realtime      align by the realtime pairs even traces of one boot\n", ANA_PID_SPACE);
			return 1;
		default:
			return ana_cli_usage_error("merge", "unknown option");
		}
	}
	M->n = argc - optind;
	if (!*out)
		return ana_cli_usage_error("merge", "no output: -o FILE");
	if (M->n < 2)
		return ana_cli_usage_error("merge", "at least two traces to merge");
	if (M->n > ANA_MERGE_MAX_TRACES)
		return ana_cli_usage_error("merge", "at most %d traces", ANA_MERGE_MAX_TRACES);
	return 0;
}

int ana_cmd_merge(int argc, char **argv)
{
	ana_merge M;
	const char *out = NULL;
	char err[PATH_MAX + 256] = "";
	int force = 0, rc, status = GT_EXIT_BROKEN;

	memset(&M, 0, sizeof(M));
	if ((rc = parse(argc, argv, &M, &out, &force)) != 0)
		return rc == 1 ? GT_EXIT_OK : rc;
	if (!(M.in = calloc((size_t)M.n, sizeof(ana_merge_in)))) {
		fprintf(stderr, "gt-analyze merge: out of memory\n");
		return GT_EXIT_BROKEN;
	}
	for (int i = 0; i < M.n; i++) {
		M.in[i].path = argv[optind + i];
		if (scan(&M.in[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "gt-analyze merge: %s\n", err);
			goto out;
		}
		if (M.in[i].truncated)
			fprintf(stderr, "gt-analyze: warning: %s is cut off; merged up to its last whole chunk\n", M.in[i].path);
	}
	assign_spaces(&M);
	align(&M);
	status = ana_merge_write(&M, out, force, err, sizeof(err));
	if (status == GT_EXIT_BROKEN) {
		fprintf(stderr, "gt-analyze merge: %s\n", err);
		goto out;
	}
	print_alignment(&M, stdout);
	for (int i = 0; i < M.n; i++)
		if (M.in[i].n_dropped)
			fprintf(stderr, "gt-analyze: warning: %s: %" PRIu64 " records of kinds this gt-analyze does not know"
			        " were left out (their times cannot be moved)\n", M.in[i].path, M.in[i].n_dropped);
out:
	for (int i = 0; i < M.n; i++) {
		free(M.in[i].pairs);
		free(M.in[i].pids);
	}
	free(M.in);
	free(M.archives);
	free(M.archive_owner);
	return status;
}

/* merge_write.c — the merged trace: every input's records moved onto the reference clock, pids
 * moved into their pid space, one set of meta keys, one end; written beside the output and moved
 * into place only when whole (an existing file is never replaced unasked). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gt_util.h"
#include "gtt_priv.h" /* gtt_rec_times */
#include "merge_priv.h"

static void mv(uint32_t *pid, uint32_t base)
{
	if (*pid)
		*pid += base;
}

/* Every pid and tid of a record into its pid space (0, "none" or gt-record itself, stays). */
static void remap(gtt_record *r, uint32_t base)
{
	switch (r->tag) {
	case GTT_REC_PROCESS: mv(&r->u.process.pid, base); mv(&r->u.process.ppid, base); break;
	case GTT_REC_THREAD: mv(&r->u.thread.pid, base); mv(&r->u.thread.tid, base); break;
	case GTT_REC_MAPPING: mv(&r->u.mapping.pid, base); break;
	case GTT_REC_SAMPLE: mv(&r->u.sample.pid, base); mv(&r->u.sample.tid, base); break;
	case GTT_REC_SWITCH: mv(&r->u.sw.pid, base); mv(&r->u.sw.tid, base); break;
	case GTT_REC_THREAD_CPU: mv(&r->u.thread_cpu.pid, base); mv(&r->u.thread_cpu.tid, base); break;
	case GTT_REC_HEALTH: mv(&r->u.health.pid, base); mv(&r->u.health.tid, base); break;
	case GTT_REC_PY_CODE: mv(&r->u.py_code.pid, base); break;
	case GTT_REC_PY_STACK: mv(&r->u.py_stack.pid, base); mv(&r->u.py_stack.tid, base); break;
	case GTT_REC_GIL: mv(&r->u.gil.pid, base); mv(&r->u.gil.holder_tid, base); break;
	case GTT_REC_STRING: mv(&r->u.string.pid, base); break;
	case GTT_REC_CUDA_DEVICE: mv(&r->u.cuda_device.pid, base); break;
	case GTT_REC_CUDA_KERNEL: mv(&r->u.kernel.pid, base); break;
	case GTT_REC_CUDA_MEMCPY: mv(&r->u.memcpy.pid, base); break;
	case GTT_REC_CUDA_MEMSET: mv(&r->u.memset.pid, base); break;
	case GTT_REC_CUDA_SYNC: mv(&r->u.sync.pid, base); break;
	case GTT_REC_CUDA_API: mv(&r->u.api.pid, base); mv(&r->u.api.tid, base); break;
	case GTT_REC_CUDA_ALLOC: mv(&r->u.alloc.pid, base); break;
	case GTT_REC_NVTX: mv(&r->u.nvtx.pid, base); mv(&r->u.nvtx.tid, base); break;
	case GTT_REC_COUNTER: mv(&r->u.counter.pid, base); break;
	case GTT_REC_CUDA_CALLSTACK: mv(&r->u.callstack.pid, base); mv(&r->u.callstack.tid, base); break;
	case GTT_REC_CAPTURE: mv(&r->u.capture.pid, base); mv(&r->u.capture.tid, base); break;
	case GTT_REC_SWITCH_GATE: mv(&r->u.gate.pid, base); break;
	default: break;
	}
}

static int put_meta(gtt_writer *w, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int put_meta(gtt_writer *w, const char *key, const char *fmt, ...)
{
	char value[PATH_MAX + 64];
	va_list ap;
	gtt_record r = { .tag = GTT_REC_META };

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	r.u.meta.key = key;
	r.u.meta.value = value;
	return gtt_write(w, &r);
}

/* The merge's own keys: which trace is which, how each was aligned, and the error. */
static int write_merge_meta(ana_merge *M)
{
	const ana_merge_in *ref = &M->in[0];
	uint64_t start = UINT64_MAX;
	char key[64];
	int rc = 0;

	for (int i = 0; i < M->n; i++) {
		const ana_merge_in *in = &M->in[i];
		uint64_t s = in->start_ns ? in->start_ns : in->fit.a_ns;
		uint64_t t = s + (uint64_t)in->delta0_ns + M->base_ns;
		if (t < start)
			start = t;
	}
	rc |= put_meta(M->w, "merge.traces", "%d", M->n);
	rc |= put_meta(M->w, "merge.base_ns", "%" PRIu64, M->base_ns);
	rc |= put_meta(M->w, "merge.pid_space", "%u", ANA_PID_SPACE);
	rc |= put_meta(M->w, "clock", "CLOCK_MONOTONIC of trace 0 (host %s)%s", ref->host,
	               M->base_ns ? " + merge.base_ns" : "");
	rc |= put_meta(M->w, "start_ns", "%" PRIu64, start);
	if (ref->start_rt_ns && ref->start_ns) /* trace 0's realtime at the merged start */
		rc |= put_meta(M->w, "start_realtime_ns", "%" PRIu64,
		               ref->start_rt_ns - ((ref->start_ns + M->base_ns) - start));
	for (int i = 0; i < M->n; i++) {
		const ana_merge_in *in = &M->in[i];
		const char *how = i == 0 ? "reference" : in->same_boot ? "same boot" : "realtime pairs";
#define K(name) (snprintf(key, sizeof(key), "merge.%d." name, i), key)
		rc |= put_meta(M->w, K("path"), "%s", in->path);
		rc |= put_meta(M->w, K("hostname"), "%s", in->host);
		rc |= put_meta(M->w, K("boot_id"), "%s", in->boot_id);
		rc |= put_meta(M->w, K("format"), "%" PRIu32 ".%" PRIu32, in->major, in->minor);
		rc |= put_meta(M->w, K("pid_base"), "%" PRIu64, (uint64_t)in->space * ANA_PID_SPACE);
		rc |= put_meta(M->w, K("shift_ns"), "%" PRId64, in->delta0_ns);
		rc |= put_meta(M->w, K("how"), "%s", how);
		if (i && !in->same_boot) {
			rc |= put_meta(M->w, K("error_ns"), "%" PRIu64, in->err_ns);
			if (in->fit.n_pairs >= 2)
				rc |= put_meta(M->w, K("drift_ppm"), "%.3f", in->fit.drift * 1e6);
		}
#undef K
	}
	return rc < 0 ? GTT_EIO : 0;
}

/* Keys every trace writes once for the whole recording are the merge's own (written above) or
 * the reference's; another trace's keep its index: trace.I.KEY. process.PID.KEY follow their pid. */
static int put_input_meta(ana_merge *M, int i, const gtt_meta *m)
{
	char key[512];
	gtt_record r = { .tag = GTT_REC_META };
	uint32_t pid;
	int n = 0;

	if (!strcmp(m->key, "start_ns") || !strcmp(m->key, "start_realtime_ns") || !strcmp(m->key, "clock"))
		snprintf(key, sizeof(key), "trace.%d.%s", i, m->key);
	else if (sscanf(m->key, "process.%" SCNu32 ".%n", &pid, &n) == 1 && n > 0)
		snprintf(key, sizeof(key), "process.%" PRIu64 ".%s",
		         (uint64_t)pid + (uint64_t)M->in[i].space * ANA_PID_SPACE, m->key + n);
	else if (i == 0)
		snprintf(key, sizeof(key), "%s", m->key);
	else
		snprintf(key, sizeof(key), "trace.%d.%s", i, m->key);
	r.u.meta.key = key;
	r.u.meta.value = m->value;
	return gtt_write(M->w, &r);
}

/* An archive piece is copied from the first trace that embeds its binary. */
static int archive_wanted(ana_merge *M, int i, const gtt_archive *a)
{
	char id[2 * GTT_BUILD_ID_MAX + 1];
	size_t k;

	for (k = 0; k < a->build_id_len && k < GTT_BUILD_ID_MAX; k++)
		snprintf(id + 2 * k, 3, "%02x", a->build_id[k]);
	id[2 * k] = 0;
	for (k = 0; k < M->n_archives; k++)
		if (!strcmp(M->archives[k], id))
			return M->archive_owner[k] == i;
	if (GT_GROW(M->archives, M->cap_archives, M->n_archives + 1) < 0)
		return GTT_ENOMEM;
	M->archive_owner = realloc(M->archive_owner, M->cap_archives * sizeof(int));
	if (!M->archive_owner)
		return GTT_ENOMEM;
	memcpy(M->archives[M->n_archives], id, sizeof(id));
	M->archive_owner[M->n_archives++] = i;
	return 1;
}

static int copy_input(ana_merge *M, int i, char *err, size_t errlen)
{
	ana_merge_in *in = &M->in[i];
	uint32_t base = in->space * ANA_PID_SPACE;
	int e = 0, rc;
	gtt_reader *r = gtt_reader_open(in->path, &e);
	gtt_record rec;

	if (!r) {
		snprintf(err, errlen, "%s: %s", in->path, gtt_strerror(e));
		return e ? e : GTT_EIO;
	}
	while ((rc = gtt_reader_next(r, &rec)) > 0) {
		uint64_t t0, t1;
		switch (rec.tag) {
		case GTT_REC_META:
			rc = put_input_meta(M, i, &rec.u.meta);
			goto next;
		case GTT_REC_END:
		case GTT_REC_CALLCHAIN: /* the reader put them into the samples; the writer interns anew */
			continue;
		case GTT_REC_ARCHIVE:
			if ((rc = archive_wanted(M, i, &rec.u.archive)) <= 0)
				goto next;
			break;
		default:
			if (!strcmp(gtt_tag_name(rec.tag), "unknown")) {
				in->n_dropped++;
				continue;
			}
			break;
		}
		if (gtt_rec_times(&rec, &t0, &t1)) {
			gtt_rec_shift(&rec, (int64_t)((uint64_t)ana_merge_delta_at(M, in, t0) + M->base_ns));
			gtt_rec_times(&rec, &t0, &t1);
			if (t1 > M->end_ns)
				M->end_ns = t1;
		}
		if (base)
			remap(&rec, base);
		if (rec.tag == GTT_REC_SAMPLE)
			in->n_samples++;
		rc = gtt_write(M->w, &rec);
next:
		if (rc < 0)
			break;
		in->n_written++;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s: %s", rc == GTT_EIO ? "writing the merged trace" : in->path, gtt_strerror(rc));
	gtt_reader_close(r);
	return rc;
}

static int write_end(ana_merge *M)
{
	gtt_record r = { .tag = GTT_REC_END };
	uint64_t n = 0;

	for (int i = 0; i < M->n; i++)
		n += M->in[i].n_samples;
	r.u.end.time_ns = M->end_ns;
	r.u.end.reason = GTT_END_TARGET_EXIT;
	r.u.end.n_samples = n;
	r.u.end.n_records = gtt_writer_records(M->w) + 1;
	return gtt_write(M->w, &r);
}

/* A private file beside out (so that the final rename stays on one file system). */
static int open_temp(const char *out, char *tmp, size_t len)
{
	snprintf(tmp, len, "%s.merge-XXXXXX", out);
	return mkstemp(tmp);
}

int ana_merge_write(ana_merge *M, const char *out, int force, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	struct stat st, ist;
	int fd, e = 0, rc = 0, status = GT_EXIT_BROKEN;

	if (lstat(out, &st) == 0) {
		if (!force) {
			snprintf(err, errlen, "%s exists: not replaced (--force replaces it)", out);
			return GT_EXIT_BROKEN;
		}
		for (int i = 0; i < M->n; i++)
			if (stat(M->in[i].path, &ist) == 0 && ist.st_dev == st.st_dev && ist.st_ino == st.st_ino) {
				snprintf(err, errlen, "%s is also an input: not replaced", out);
				return GT_EXIT_BROKEN;
			}
	}
	if ((fd = open_temp(out, tmp, sizeof(tmp))) < 0) {
		snprintf(err, errlen, "cannot create a file beside %s: %s", out, strerror(errno));
		return GT_EXIT_BROKEN;
	}
	{
		mode_t um = umask(0); /* mkstemp made it 0600: an output gets the usual mode */
		umask(um);
		fchmod(fd, 0666 & ~um);
	}
	if (!(M->w = gtt_writer_fdopen(fd, 0, &e))) {
		close(fd);
		snprintf(err, errlen, "%s: %s", out, gtt_strerror(e));
		goto out;
	}
	if ((rc = write_merge_meta(M)) < 0) {
		snprintf(err, errlen, "writing %s: %s", out, gtt_strerror(rc));
		goto out;
	}
	for (int i = 0; i < M->n && rc >= 0; i++)
		rc = copy_input(M, i, err, errlen);
	if (rc >= 0 && (rc = write_end(M)) < 0)
		snprintf(err, errlen, "writing %s: %s", out, gtt_strerror(rc));
	e = gtt_writer_close(M->w);
	M->w = NULL;
	if (rc >= 0 && e < 0) {
		rc = e;
		snprintf(err, errlen, "writing %s: %s", out, gtt_strerror(e));
	}
	if (rc < 0)
		goto out;
	/* without --force, link() refuses a file that appeared meanwhile */
	if (force ? rename(tmp, out) != 0 : link(tmp, out) != 0) {
		snprintf(err, errlen, "%s: %s", out, errno == EEXIST ? "appeared meanwhile: not replaced" : strerror(errno));
		goto out;
	}
	status = GT_EXIT_OK;
	for (int i = 0; i < M->n; i++)
		if (M->in[i].n_dropped)
			status = GT_EXIT_PARTIAL;
out:
	if (M->w)
		gtt_writer_close(M->w);
	M->w = NULL;
	unlink(tmp); /* gone after a rename; the second name after a link */
	return status;
}

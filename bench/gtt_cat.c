/* gtt_cat.c — a trace's records as text lines, for tests and debugging (built with the tests):
 *   gtt_cat TRACE [KIND...]
 * One line per record, "KIND t0 t1 pid tid", the kind's own fields after it for meta
 * ("meta KEY VALUE"), process (event, ppid, comm), thread (event, name), clock (realtime,
 * uncertainty, kind, host, boot id), cuda_device (device, name), string (id, text) and counter
 * (name id, value), switch (cpu, kind), switch_gate (event, reason, rate, limit), capture
 * (event, source), py_stack (flags, frames); t0 = t1
 * for a record with one time, "-" for a record without. Only the named kinds when given.
 * Exit 0, or 2 when the trace does not open or a chunk is corrupt. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gt_util.h"
#include "gtt.h"
#include "gtt_priv.h"

static void who(const gtt_record *r, uint32_t *pid, uint32_t *tid)
{
	*pid = *tid = 0;
	switch (r->tag) {
	case GTT_REC_PROCESS: *pid = r->u.process.pid; break;
	case GTT_REC_THREAD: *pid = r->u.thread.pid; *tid = r->u.thread.tid; break;
	case GTT_REC_MAPPING: *pid = r->u.mapping.pid; break;
	case GTT_REC_SAMPLE: *pid = r->u.sample.pid; *tid = r->u.sample.tid; break;
	case GTT_REC_SWITCH: *pid = r->u.sw.pid; *tid = r->u.sw.tid; break;
	case GTT_REC_THREAD_CPU: *pid = r->u.thread_cpu.pid; *tid = r->u.thread_cpu.tid; break;
	case GTT_REC_HEALTH: *pid = r->u.health.pid; *tid = r->u.health.tid; break;
	case GTT_REC_PY_STACK: *pid = r->u.py_stack.pid; *tid = r->u.py_stack.tid; break;
	case GTT_REC_GIL: *pid = r->u.gil.pid; *tid = r->u.gil.holder_tid; break;
	case GTT_REC_STRING: *pid = r->u.string.pid; break;
	case GTT_REC_CUDA_DEVICE: *pid = r->u.cuda_device.pid; break;
	case GTT_REC_CUDA_KERNEL: *pid = r->u.kernel.pid; break;
	case GTT_REC_CUDA_MEMCPY: *pid = r->u.memcpy.pid; break;
	case GTT_REC_CUDA_MEMSET: *pid = r->u.memset.pid; break;
	case GTT_REC_CUDA_SYNC: *pid = r->u.sync.pid; break;
	case GTT_REC_CUDA_API: *pid = r->u.api.pid; *tid = r->u.api.tid; break;
	case GTT_REC_CUDA_ALLOC: *pid = r->u.alloc.pid; break;
	case GTT_REC_NVTX: *pid = r->u.nvtx.pid; *tid = r->u.nvtx.tid; break;
	case GTT_REC_COUNTER: *pid = r->u.counter.pid; break;
	case GTT_REC_CUDA_CALLSTACK: *pid = r->u.callstack.pid; *tid = r->u.callstack.tid; break;
	case GTT_REC_PY_CODE: *pid = r->u.py_code.pid; break;
	case GTT_REC_CAPTURE: *pid = r->u.capture.pid; *tid = r->u.capture.tid; break;
	default: break;
	}
}

static int wanted(const char *name, int argc, char **argv)
{
	int i;
	if (argc <= 2)
		return 1;
	for (i = 2; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	gtt_reader *r;
	gtt_record rec;
	int err = 0, rc, status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: gtt_cat TRACE [KIND...]\n");
		return GT_EXIT_USAGE;
	}
	if (!(r = gtt_reader_open(argv[1], &err))) {
		fprintf(stderr, "gtt_cat: %s: %s\n", argv[1], gtt_strerror(err));
		return GT_EXIT_BROKEN;
	}
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		const char *name;
		uint64_t t0, t1;
		uint32_t pid, tid;

		if (rc < 0) {
			fprintf(stderr, "gtt_cat: %s: %s\n", argv[1], gtt_strerror(rc));
			status = GT_EXIT_BROKEN;
			if (rc == GTT_ECORRUPT || rc == GTT_EINVAL || rc == GTT_ENOZSTD)
				continue;
			break;
		}
		name = gtt_tag_name(rec.tag);
		if (!wanted(name, argc, argv))
			continue;
		if (rec.tag == GTT_REC_META) {
			printf("meta %s %s\n", rec.u.meta.key, rec.u.meta.value);
			continue;
		}
		who(&rec, &pid, &tid);
		if (gtt_rec_times(&rec, &t0, &t1))
			printf("%s %" PRIu64 " %" PRIu64 " %u %u", name, t0, t1, pid, tid);
		else
			printf("%s - - %u %u", name, pid, tid);
		switch (rec.tag) {
		case GTT_REC_PROCESS:
			printf(" %u %u %s", rec.u.process.event, rec.u.process.ppid, rec.u.process.comm);
			break;
		case GTT_REC_THREAD:
			printf(" %u %s", rec.u.thread.event, rec.u.thread.name);
			break;
		case GTT_REC_CLOCK:
			printf(" %" PRIu64 " %" PRIu64 " %u %s %s", rec.u.clock.realtime_ns, rec.u.clock.uncertainty_ns,
			       rec.u.clock.kind, rec.u.clock.hostname, rec.u.clock.boot_id);
			break;
		case GTT_REC_CUDA_DEVICE:
			printf(" %u %s", rec.u.cuda_device.device, rec.u.cuda_device.name);
			break;
		case GTT_REC_STRING:
			printf(" %u %s", rec.u.string.id, rec.u.string.text);
			break;
		case GTT_REC_COUNTER:
			printf(" %u %.17g", rec.u.counter.name_id, rec.u.counter.value);
			break;
		case GTT_REC_SWITCH:
			printf(" %u %u", rec.u.sw.cpu, rec.u.sw.kind);
			break;
		case GTT_REC_PY_STACK:
			printf(" %u %u", rec.u.py_stack.flags, rec.u.py_stack.n_frames);
			break;
		case GTT_REC_CAPTURE:
			printf(" %u %u", rec.u.capture.event, rec.u.capture.source);
			break;
		case GTT_REC_SWITCH_GATE:
			printf(" %u %u %" PRIu64 " %" PRIu64, rec.u.gate.event, rec.u.gate.reason, rec.u.gate.rate_per_s,
			       rec.u.gate.limit_per_s);
			break;
		default:
			break;
		}
		putchar('\n');
	}
	gtt_reader_close(r);
	return status;
}

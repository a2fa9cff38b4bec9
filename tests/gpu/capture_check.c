/* capture_check.c — the records tests/gpu/capture_nvtx.sh checks, one per line:
 *   capture TIME PID TID EVENT SOURCE NAME      (gt-record's own: pid 0; the agent's: pid != 0)
 *   sample TIME TID | pystack TIME TID | api START END TID | kernel START END
 *   meta KEY VALUE | end REASON N_SAMPLES | bad N | truncated 0|1
 * Usage: capture_check TRACE. Built on the GPU box against lib/ alone (no libdw there). */
#include <stdio.h>
#include "gtt.h"

int main(int argc, char **argv)
{
	int err = 0, rc;
	unsigned long long bad = 0;
	gtt_reader *r = argc > 1 ? gtt_reader_open(argv[1], &err) : NULL;
	gtt_record rec;

	if (!r) {
		fprintf(stderr, "capture_check: %s: %s\n", argc > 1 ? argv[1] : "(no file)", gtt_strerror(err));
		return 2;
	}
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			bad++;
			continue;
		}
		switch (rec.tag) {
		case GTT_REC_CAPTURE:
			printf("capture %llu %u %u %u %u %s\n", (unsigned long long)rec.u.capture.time_ns, rec.u.capture.pid,
			       rec.u.capture.tid, rec.u.capture.event, rec.u.capture.source,
			       rec.u.capture.name[0] ? rec.u.capture.name : "-");
			break;
		case GTT_REC_SAMPLE:
			printf("sample %llu %u\n", (unsigned long long)rec.u.sample.time_ns, rec.u.sample.tid);
			break;
		case GTT_REC_PY_STACK:
			printf("pystack %llu %u\n", (unsigned long long)rec.u.py_stack.time_ns, rec.u.py_stack.tid);
			break;
		case GTT_REC_CUDA_API:
			printf("api %llu %llu %u\n", (unsigned long long)rec.u.api.start_ns,
			       (unsigned long long)rec.u.api.end_ns, rec.u.api.tid);
			break;
		case GTT_REC_CUDA_KERNEL:
			printf("kernel %llu %llu\n", (unsigned long long)rec.u.kernel.start_ns,
			       (unsigned long long)rec.u.kernel.end_ns);
			break;
		case GTT_REC_META:
			printf("meta %s %s\n", rec.u.meta.key, rec.u.meta.value);
			break;
		case GTT_REC_END:
			printf("end %u %llu\n", rec.u.end.reason, (unsigned long long)rec.u.end.n_samples);
			break;
		default:
			break;
		}
	}
	printf("bad %llu\ntruncated %d\n", bad, gtt_reader_truncated(r));
	gtt_reader_close(r);
	return 0;
}

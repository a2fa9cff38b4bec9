/* clock.c — realtime pairs for merging traces, and perf's clock against ours (time namespaces). */
#include "clock.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gt_util.h"
#include "procfs.h"
#include "rec_err.h"

#define PAIR_READS 9         /* the tightest of these brackets is kept */
#define OFFSET_READS 8       /* COMM records bracketed for the perf clock offset */
#define AGREE_SLACK_NS 50000 /* timens and the measurement agree within uncertainty + 50 us */

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * GT_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

void rec_clock_read_pair(rec_clock_pair *p)
{
	uint64_t best = UINT64_MAX;
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < PAIR_READS; i++) {
		uint64_t a = read_ns(CLOCK_MONOTONIC);
		uint64_t rt = read_ns(CLOCK_REALTIME);
		uint64_t b = read_ns(CLOCK_MONOTONIC);
		if (b - a < best) {
			best = b - a;
			p->mono_ns = a + (b - a) / 2;
			p->realtime_ns = rt;
			p->uncertainty_ns = (b - a + 1) / 2;
		}
	}
}

int rec_clock_write(gtt_writer *w, uint32_t kind)
{
	rec_clock_pair p;
	char host[256] = "", boot_id[64] = "";
	gtt_record r;

	gethostname(host, sizeof(host) - 1);
	rec_procfs_boot_id(boot_id, sizeof(boot_id));
	rec_clock_read_pair(&p);
	memset(&r, 0, sizeof(r));
	r.tag = GTT_REC_CLOCK;
	r.u.clock.mono_ns = p.mono_ns;
	r.u.clock.realtime_ns = p.realtime_ns;
	r.u.clock.uncertainty_ns = p.uncertainty_ns;
	r.u.clock.kind = kind;
	r.u.clock.hostname = host;
	r.u.clock.boot_id = boot_id;
	return rec_err_from_gtt(gtt_write(w, &r));
}

/* Bracket prctl(PR_SET_NAME) — which makes the kernel write a COMM record stamped with perf's
 * clock into a dummy event of this thread — between two reads of our clock. 0 with the best
 * offset, or -errno (perf_event_open refused, no record came). */
static int measure(int64_t *offset_ns, uint64_t *uncertainty_ns)
{
	struct perf_event_attr a;
	uint64_t t0[OFFSET_READS], t1[OFFSET_READS], best = UINT64_MAX;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 3 * page;
	char name[17] = "";
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t head, off;
	int fd, i, k = 0, rc = -ENOENT;
	void *ring;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TIME;
	a.sample_id_all = 1;
	a.comm = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		rc = -errno;
		goto out_fd;
	}
	prctl(PR_GET_NAME, name);
	for (i = 0; i < OFFSET_READS; i++) {
		t0[i] = read_ns(CLOCK_MONOTONIC);
		prctl(PR_SET_NAME, name); /* the same name: only the COMM record is wanted */
		t1[i] = read_ns(CLOCK_MONOTONIC);
	}
	meta = ring;
	data = (uint8_t *)ring + page;
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	for (off = 0; off + sizeof(struct perf_event_header) <= head && off < 2 * page && k < OFFSET_READS;) {
		struct perf_event_header h;
		uint64_t ts;
		memcpy(&h, data + off, sizeof(h));
		if (h.size < sizeof(h) + 8 || off + h.size > 2 * page)
			break;
		if (h.type == PERF_RECORD_COMM) {
			memcpy(&ts, data + off + h.size - 8, 8); /* sample_id: the time alone */
			if (t1[k] - t0[k] < best) {
				best = t1[k] - t0[k];
				*offset_ns = (int64_t)(t0[k] + (t1[k] - t0[k]) / 2) - (int64_t)ts;
				*uncertainty_ns = (t1[k] - t0[k] + 1) / 2;
				rc = 0;
			}
			k++;
		}
		off += h.size;
	}
	munmap(ring, len);
out_fd:
	close(fd);
	return rc;
}

void rec_clock_perf_offset(rec_clock_offset *o)
{
	memset(o, 0, sizeof(*o));
	o->have_measured = measure(&o->measured_ns, &o->uncertainty_ns) == 0;
	o->have_timens = rec_procfs_timens_monotonic(0, &o->timens_ns) == 0;
	if (o->have_measured && o->have_timens) {
		int64_t d = o->measured_ns - o->timens_ns;
		o->agree = (uint64_t)(d < 0 ? -d : d) <= o->uncertainty_ns + AGREE_SLACK_NS;
		o->offset_ns = o->agree ? o->timens_ns : o->measured_ns;
	} else if (o->have_measured) {
		/* no time namespaces in this kernel: the clocks are one unless measured otherwise */
		int64_t d = o->measured_ns;
		o->agree = (uint64_t)(d < 0 ? -d : d) <= o->uncertainty_ns + AGREE_SLACK_NS;
		o->offset_ns = o->agree ? 0 : o->measured_ns;
	} else {
		o->agree = 1;
		o->offset_ns = o->have_timens ? o->timens_ns : 0;
	}
}

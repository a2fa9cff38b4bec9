/* perf_sampler.c — perf_event_open cpu-clock sampling and ring-buffer drain into the trace. */
#include "perf_sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__aarch64__)
#include <asm/perf_regs.h>
#endif

#include "gt_util.h"
#include "perf_decode.h"
#include "perf_priv.h"
#include "perf_tree.h"
#include "procfs.h"
#include "rec_err.h"
#include "swgate.h"

#define MAX_RECORD_BYTES 65536
/* records newer than this before a drain round began may still be in flight in another ring;
 * they wait for the next round so that records leave in time order across CPUs */
#define ORDER_MARGIN_NS (5 * GT_NS_PER_MS)

/* The user registers the analysis needs to start a DWARF unwind. */
#if defined(__x86_64__)
#define USER_REGS_MASK ((1ull << PERF_REG_X86_AX) | (1ull << PERF_REG_X86_BX) | (1ull << PERF_REG_X86_CX) | \
	(1ull << PERF_REG_X86_DX) | (1ull << PERF_REG_X86_SI) | (1ull << PERF_REG_X86_DI) |                 \
	(1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP) |                 \
	(1ull << PERF_REG_X86_R8) | (1ull << PERF_REG_X86_R9) | (1ull << PERF_REG_X86_R10) |                \
	(1ull << PERF_REG_X86_R11) | (1ull << PERF_REG_X86_R12) | (1ull << PERF_REG_X86_R13) |              \
	(1ull << PERF_REG_X86_R14) | (1ull << PERF_REG_X86_R15))
#elif defined(__aarch64__)
#define USER_REGS_MASK ((1ull << PERF_REG_ARM64_MAX) - 1) /* x0..x30, sp, pc */
#else
#define USER_REGS_MASK 0ull
#endif


static long perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* ---- opening ---- */

/* How the events follow the target. */
enum { MODE_LAUNCH, MODE_ATTACH, MODE_SYSTEM };

static void fill_attr(rec_perf *p, int mode)
{
	struct perf_event_attr *a = &p->attr;
	double hz = p->o.freq_hz > 0 ? p->o.freq_hz : 99;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	/* a fixed period in ns: cpu-clock is a timer, so every sample stands for this much on-CPU
	 * time (per task: exactly, the remainder is kept across switches; system-wide: the CPU's
	 * time, given to whichever task runs when the timer fires, so a task's samples are its
	 * on-CPU time x rate on average), without freq adjustments */
	a->sample_period = gt_hz_to_period_ns(hz);
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
	                 PERF_SAMPLE_CALLCHAIN;
	if (p->o.dwarf) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = USER_REGS_MASK;
		a->sample_stack_user = p->o.stack_bytes;
		/* the user callchain stays: where a frame larger than the copy hides the callers
		 * from the unwinder, the analyzer continues from this frame-pointer chain (a few
		 * words per sample; see docs/RECORD.md) */
	}
	a->exclude_kernel = p->o.user_only ? 1 : 0;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = p->o.user_only ? 1 : 0;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->build_id = 1;
	a->task = 1;
	/* per CPU: PERF_RECORD_SWITCH_CPU_WIDE, with the other task */
	a->context_switch = p->o.switches != REC_SW_OFF;
	a->inherit = mode != MODE_SYSTEM;
	a->disabled = mode == MODE_LAUNCH;
	a->enable_on_exec = mode == MODE_LAUNCH;
	a->exclude_idle = mode == MODE_SYSTEM; /* the idle task is nobody's */
	if (p->lean) {
		/* The side band (mappings, names, forks and exits) and the context switches come
		 * from a dummy event of their own whose records carry the time alone: the kernel
		 * writes two switch records at every switch of every task, in the context of the
		 * task switching, and each field of the sample_id costs it there (the pid lookups
		 * most), as does each event it has to look at. Measured on a 2-vCPU VM, two threads
		 * pinned to one CPU handing a byte to and fro, target CPU per switch, medians of 10
		 * interleaved runs: no recorder 0.897 us; switch records with tid/time/cpu on the
		 * sampling event +0.272 us (perf record -a --switch-events the same); on a dummy
		 * event, time alone +0.257 us; the side band on that dummy too (one event per CPU
		 * for the switch path to look at) +0.23 us. The ring says the CPU, the records' own
		 * fields say who (the switch pairs: perf_decode.c, do_lean_switch), and a switch
		 * record is 24 bytes instead of 40 for the drain. */
		p->sw = *a;
		p->sw.config = PERF_COUNT_SW_DUMMY;
		p->sw.sample_period = 0;
		p->sw.sample_type = PERF_SAMPLE_TIME;
		p->sw.exclude_idle = 0;
		a->comm = a->comm_exec = a->mmap = a->mmap2 = a->build_id = a->task = 0;
		a->context_switch = 0;
		if (p->o.switches == REC_SW_AUTO) {
			/* the switch gate: the switches on an event of their own, so that closing it
			 * stops them and nothing else. A closed event costs the switch path nothing (an
			 * existing one, even disabled, is looked at on every switch); an open one costs
			 * a little more than the side band's (two events per CPU for that path to look
			 * at). */
			p->swonly = p->sw;
			p->swonly.comm = p->swonly.comm_exec = p->swonly.mmap = p->swonly.mmap2 = 0;
			p->swonly.build_id = p->swonly.task = 0;
			p->sw.context_switch = 0;
		}
		return;
	}
	if (!p->o.capture)
		return;
	/* Capture control: the sampling events start off and are switched with ioctls; the
	 * records that keep the trace true while they are off (mappings, names, forks and exits:
	 * the process tree) come from a dummy event that stays on, as perf record -D does. A
	 * disabled event writes no side-band records, so the sampling event carries none. */
	p->track = *a;
	p->track.config = PERF_COUNT_SW_DUMMY;
	p->track.sample_period = 0;
	p->track.context_switch = 0; /* switches only while sampling: they cost per switch */
	a->comm = a->comm_exec = a->mmap = a->mmap2 = a->build_id = a->task = 0;
	a->disabled = 1;
	a->enable_on_exec = 0;
	if (mode == MODE_SYSTEM && p->o.switches == REC_SW_AUTO) {
		/* the switch gate under capture control: the switches on an event of their own, with
		 * the sampling event's full sample_id (each record names its task: no pairs to keep
		 * across a stop of sampling), open while sampling is on and the gate is open */
		p->swonly = p->track;
		p->swonly.comm = p->swonly.comm_exec = p->swonly.mmap = p->swonly.mmap2 = 0;
		p->swonly.build_id = p->swonly.task = 0;
		p->swonly.context_switch = 1;
		p->swonly.disabled = 0;
		a->context_switch = 0;
	}
}

static void open_error(int e, const char *what, char *err, size_t errlen)
{
	if (e == EACCES || e == EPERM) {
		char now[32] = "unreadable";
		int paranoid;
		if (rec_procfs_perf_paranoid(&paranoid) == 0)
			snprintf(now, sizeof(now), "%d", paranoid);
		snprintf(err, errlen, "perf_event_open %s: %s; need kernel.perf_event_paranoid <= 1 "
		         "(now %s; sysctl -w kernel.perf_event_paranoid=1) or CAP_PERFMON/root",
		         what, strerror(e), now);
	} else if (e == ESRCH) {
		snprintf(err, errlen, "perf_event_open %s: no such process", what);
	} else if (e == ENOENT || e == ENODEV || e == EOPNOTSUPP) {
		snprintf(err, errlen, "perf_event_open %s: %s (is perf_event supported in this kernel/container?)",
		         what, strerror(e));
	} else {
		snprintf(err, errlen, "perf_event_open %s: %s", what, strerror(e));
	}
}

/* Open one event, falling back for old kernels (no build_id in MMAP2) and, when the kernel
 * refuses kernel samples, to user-only sampling. Returns fd or -errno. */
static int open_event(rec_perf *p, struct perf_event_attr *a, pid_t pid, int cpu)
{
	long fd = perf_open(a, pid, cpu);

	if (fd < 0 && errno == EINVAL && a->build_id) {
		a->build_id = 0;
		fd = perf_open(a, pid, cpu);
		if (fd < 0)
			a->build_id = 1;
	}
	if (fd < 0 && (errno == EACCES || errno == EPERM) && !a->exclude_kernel) {
		a->exclude_kernel = 1;
		a->exclude_callchain_kernel = 1;
		fd = perf_open(a, pid, cpu);
		if (fd < 0) {
			int e = errno;
			a->exclude_kernel = 0;
			a->exclude_callchain_kernel = 0;
			errno = e;
		} else {
			p->st.user_only = 1;
			/* the other event of a capture pair is refused the same way */
			p->attr.exclude_kernel = p->track.exclude_kernel = p->sw.exclude_kernel = p->swonly.exclude_kernel = 1;
			p->attr.exclude_callchain_kernel = p->track.exclude_callchain_kernel = 1;
			p->sw.exclude_callchain_kernel = p->swonly.exclude_callchain_kernel = 1;
		}
	}
	if (fd < 0 && errno == EMFILE) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
				fd = perf_open(a, pid, cpu);
		}
	}
	if (fd < 0)
		return -errno;
	if (a->mmap2)
		p->st.kernel_build_ids = a->build_id;
	return (int)fd;
}

static int keep_fd(rec_perf *p, int fd)
{
	if (GT_GROW(p->fds, p->cap_fds, p->n_fds + 1) < 0)
		return -ENOMEM;
	p->fds[p->n_fds++] = fd;
	p->st.n_fds = (uint32_t)p->n_fds;
	return 0;
}

/* Event a of (pid, cpu), kept, writing into the ring of sampling event sfd; what names it in an
 * error. 0 or -errno with the reason in err. */
static int open_into(rec_perf *p, struct perf_event_attr *a, pid_t pid, int cpu, int sfd, const char *what,
                     char *err, size_t errlen)
{
	int fd = open_event(p, a, pid, cpu);
	if (fd < 0) {
		char where[96];
		snprintf(where, sizeof(where), "(%s, cpu %d)", what, cpu);
		open_error(-fd, where, err, errlen);
		return fd;
	}
	if (keep_fd(p, fd) < 0) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, sfd) < 0) {
		int rc = -errno;
		snprintf(err, errlen, "PERF_EVENT_IOC_SET_OUTPUT (%s): %s", what, strerror(errno));
		return rc;
	}
	return 0;
}

/* o.capture: the tracking event of (pid, cpu), writing into the ring of sampling event sfd.
 * 0 or -errno with the reason in err. */
static int open_track(rec_perf *p, pid_t pid, int cpu, int sfd, char *err, size_t errlen)
{
	if (!p->o.capture)
		return 0;
	if (GT_GROW(p->sfds, p->cap_sfds, p->n_sfds + 1) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->sfds[p->n_sfds++] = sfd;
	return open_into(p, &p->track, pid, cpu, sfd, "tracking event", err, errlen);
}

/* Lean: the side-band and context-switch event of cpu, writing into the ring of sampling
 * event sfd. 0 or -errno with the reason in err. */
static int open_switches(rec_perf *p, int cpu, int sfd, char *err, size_t errlen)
{
	if (!p->lean)
		return 0;
	return open_into(p, &p->sw, -1, cpu, sfd, "side band and context switches", err, errlen);
}

int rec_perf_switch_gateable(const rec_perf *p)
{
	return p && p->system && p->o.switches == REC_SW_AUTO;
}

static void close_switches(rec_perf *p)
{
	for (int i = 0; i < p->n_cpus; i++)
		if (p->swfds[i] >= 0) {
			close(p->swfds[i]);
			p->swfds[i] = -1;
		}
	p->switches_open = 0;
}

/* Open or close the switch events as the gate and capture control together say: open while
 * the gate is open and (under capture control) sampling is on. 0, or -errno of the first open
 * that failed (the ones opened are closed again). */
static int apply_switches(rec_perf *p, uint64_t *when_ns)
{
	int rc = 0, want = p->gate_open && (!p->o.capture || p->sampling);

	if (!want) {
		close_switches(p);
		*when_ns = gtt_now_ns();
		return 0;
	}
	*when_ns = gtt_now_ns();
	if (p->switches_open)
		return 0;
	/* the pairs start afresh from before the first event opens (no record is earlier) */
	if ((rc = rec_perf_decoder_switches_opened(p->dec, *when_ns)) < 0)
		return rc;
	for (int i = 0; i < p->n_cpus && rc == 0; i++) {
		int fd = p->rings[i].fd >= 0 ? open_event(p, &p->swonly, -1, p->cpus[i]) : -EBADF;
		if (fd < 0) {
			rc = fd;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[i].fd) < 0) {
			rc = -errno;
			close(fd);
		} else {
			p->swfds[i] = fd;
		}
	}
	if (rc < 0) {
		close_switches(p);
		return rc;
	}
	p->switches_open = 1;
	*when_ns = gtt_now_ns(); /* every CPU's switches are written from here on */
	if (p->opened_once++) /* (the first opening, at the start, has the recording's START record) */
		rec_perf_decoder_switches_ready(p->dec, *when_ns);
	return 0;
}

int rec_perf_switches(rec_perf *p, int on, uint64_t *when_ns)
{
	if (!rec_perf_switch_gateable(p) || !p->swfds)
		return -EINVAL;
	p->gate_open = on;
	int rc = apply_switches(p, when_ns);
	if (rc < 0)
		p->gate_open = 0;
	return rc;
}

/* Gateable: every CPU's switch event, opened at the start (the gate starts open). 0 or -errno
 * with the reason in err. */
static int open_gate_events(rec_perf *p, char *err, size_t errlen)
{
	uint64_t when;
	int rc;

	if (!rec_perf_switch_gateable(p))
		return 0;
	if (!(p->swfds = malloc((size_t)p->n_cpus * sizeof(*p->swfds)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < p->n_cpus; i++)
		p->swfds[i] = -1;
	/* The kernel turns its scheduler hooks for perf on when the first event that needs them
	 * is made, and waits for an RCU grace period to do so (kernel/events/core.c,
	 * account_event); closing the last one turns them off a second later. Opening the switch
	 * events for a window 3.8 s after the gate closed then paid that wait every time: on the
	 * 2-CPU VM with four busy threads it held the drain for up to 650 ms (a lag window, and a
	 * window judged on no switches). A per-task event, disabled, on our own thread keeps the
	 * hooks on for the whole recording: they cost a task without perf events a test or two
	 * per switch. Without it (refused) the gate still works, only slower to open. */
	struct perf_event_attr k;
	memset(&k, 0, sizeof(k));
	k.size = sizeof(k);
	k.type = PERF_TYPE_SOFTWARE;
	k.config = PERF_COUNT_SW_DUMMY;
	k.disabled = 1;
	k.exclude_kernel = p->attr.exclude_kernel;
	k.exclude_hv = 1;
	p->keeper_fd = (int)perf_open(&k, 0, -1);
	/* the gate starts open; under capture control the events come with sampling */
	if ((rc = rec_perf_switches(p, 1, &when)) < 0)
		open_error(-rc, "(context switches)", err, errlen);
	return rc;
}

static size_t choose_ring_bytes(const rec_perf *p)
{
	/* per CPU at most one thread runs, so the fill rate is ~rate x record size per CPU;
	 * size for >= 2 s of samples (fp ~0.2 KB, dwarf ~stack bytes each) plus switch records,
	 * capped so that the total locked memory stays modest on many-core boxes */
	uint64_t per_sample = p->o.dwarf ? p->o.stack_bytes + 512 : 256;
	uint64_t want = (uint64_t)(2.0 * (p->o.freq_hz > 0 ? p->o.freq_hz : 99) * (double)per_sample) + (256u << 10);

	/* system-wide rings also carry every other process's switch, fork and mmap records
	 * until the drain drops them: 1 MiB more holds ~25 k switch records per CPU */
	if (p->system)
		want += 1u << 20;
	uint64_t cap_total = 256ull << 20, bytes = 64u << 10;

	while (bytes < want && bytes < (64ull << 20))
		bytes <<= 1;
	while (bytes > (128u << 10) && bytes * (uint64_t)p->n_cpus > cap_total)
		bytes >>= 1;
	return (size_t)bytes;
}

/* mmap the ring for cpu slot i on fd; shrinks on EPERM/ENOMEM (locked-memory limits). */
static int map_ring(rec_perf *p, int i, int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t bytes = p->o.ring_bytes;
	void *m = MAP_FAILED;

	while (bytes >= (size_t)page * 2) {
		m = mmap(NULL, bytes + (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED || (errno != EPERM && errno != ENOMEM))
			break;
		bytes >>= 1;
	}
	if (m == MAP_FAILED)
		return -errno;
	p->rings[i].fd = fd;
	p->rings[i].meta = m;
	p->rings[i].data = (uint8_t *)m + page;
	p->rings[i].size = bytes;
	if (p->st.ring_bytes == 0 || bytes < p->st.ring_bytes)
		p->st.ring_bytes = bytes;
	return 0;
}

static rec_perf *create(const rec_perf_opts *o, gtt_writer *w, rec_perf_observer obs, void *ctx, int mode)
{
	rec_perf *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->o = *o;
	if (p->o.dwarf) {
		if (p->o.stack_bytes == 0)
			p->o.stack_bytes = 8192;
		p->o.stack_bytes = (p->o.stack_bytes + 7) & ~7u;
		if (p->o.stack_bytes > 65528)
			p->o.stack_bytes = 65528;
	}
	p->w = w;
	p->system = mode == MODE_SYSTEM;
	/* with capture control the switches stay on the sampling event, full sample_id and all:
	 * the lean pairs carry who is on each CPU from record to record, which a sampling stop
	 * and start in between would leave stale */
	p->lean = p->system && !p->o.capture;
	p->n_cpus = rec_procfs_online_cpus(&p->cpus);
	if (p->n_cpus < 0 || !(p->rings = calloc((size_t)p->n_cpus, sizeof(*p->rings)))) {
		free(p->cpus);
		free(p);
		return NULL;
	}
	for (int i = 0; i < p->n_cpus; i++) {
		p->rings[i].fd = -1;
		p->rings[i].rs.cpu = p->cpus[i];
	}
	p->keeper_fd = -1;
	if (p->o.ring_bytes == 0)
		p->o.ring_bytes = choose_ring_bytes(p);
	p->st.n_cpus = (uint32_t)p->n_cpus;
	p->st.user_only = p->o.user_only;
	p->st.system = p->system;
	fill_attr(p, mode);
	p->dec = rec_perf_decoder_create(w, obs, ctx, p->attr.sample_type, p->attr.sample_regs_user);
	if (!p->dec) {
		free(p->rings);
		free(p->cpus);
		free(p);
		return NULL;
	}
	if (p->lean)
		rec_perf_decoder_set_lean(p->dec);
	return p;
}

/* One event per online CPU for pid (-1: every task), each with its own ring. 0 or -errno
 * with the reason in err. */
static int open_per_cpu(rec_perf *p, pid_t pid, char *err, size_t errlen)
{
	int i, fd, rc;

	for (i = 0; i < p->n_cpus; i++) {
		fd = open_event(p, &p->attr, pid, p->cpus[i]);
		if (fd < 0) {
			char what[64];
			snprintf(what, sizeof(what), pid < 0 ? "(system-wide, cpu %d)" : "(cpu %d)", p->cpus[i]);
			open_error(-fd, what, err, errlen);
			return fd;
		}
		if (keep_fd(p, fd) < 0) {
			close(fd);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if ((rc = map_ring(p, i, fd)) < 0) {
			snprintf(err, errlen, "mmap of the perf ring buffer (%zu bytes): %s", p->o.ring_bytes, strerror(-rc));
			return rc;
		}
		if ((rc = open_track(p, pid, p->cpus[i], fd, err, errlen)) < 0)
			return rc;
		if ((rc = open_switches(p, p->cpus[i], fd, err, errlen)) < 0)
			return rc;
	}
	return open_gate_events(p, err, errlen);
}

rec_perf *rec_perf_open_launch(pid_t pid, const rec_perf_opts *o, gtt_writer *w,
                               rec_perf_observer obs, void *ctx, char *err, size_t errlen)
{
	rec_perf *p = create(o, w, obs, ctx, MODE_LAUNCH);

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (open_per_cpu(p, pid, err, errlen) < 0) {
		rec_perf_close(p);
		return NULL;
	}
	return p;
}

int rec_perf_open_system(pid_t root, int wait_exec, const rec_perf_opts *o, gtt_writer *w,
                         rec_perf_observer obs, void *ctx, rec_perf **out, char *err, size_t errlen)
{
	rec_perf *p = create(o, w, obs, ctx, MODE_SYSTEM);
	int rc = -ENOMEM;

	*out = NULL;
	if (!p || !(p->tree = rec_ptree_create()) || rec_ptree_add_root(p->tree, root, wait_exec) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rec_perf_decoder_set_tree(p->dec, p->tree);
	if ((rc = open_per_cpu(p, -1, err, errlen)) < 0)
		goto fail;
	*out = p;
	return 0;
fail:
	rec_perf_close(p);
	return rc;
}

rec_perf *rec_perf_open_attach(const rec_perf_opts *o, gtt_writer *w, rec_perf_observer obs,
                               void *ctx, char *err, size_t errlen)
{
	rec_perf *p = create(o, w, obs, ctx, MODE_ATTACH);

	if (!p) {
		snprintf(err, errlen, "out of memory");
	}
	return p;
}

int rec_perf_attach_thread(rec_perf *p, pid_t tid, char *err, size_t errlen)
{
	int i, fd, rc;
	size_t first = p->n_fds, first_s = p->n_sfds, k;
	int mapped_here[p->n_cpus > 0 ? p->n_cpus : 1];

	memset(mapped_here, 0, sizeof(mapped_here));

	if (rec_i32_has(p->attached, p->n_attached, tid))
		return 1;
	for (i = 0; i < p->n_cpus; i++) {
		fd = open_event(p, &p->attr, tid, p->cpus[i]);
		if (fd < 0) {
			char what[64];
			snprintf(what, sizeof(what), "(thread %d)", (int)tid);
			open_error(-fd, what, err, errlen);
			rc = fd;
			goto fail;
		}
		if (keep_fd(p, fd) < 0) {
			close(fd);
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		if (p->rings[i].fd < 0) {
			if ((rc = map_ring(p, i, fd)) < 0) {
				snprintf(err, errlen, "mmap of the perf ring buffer: %s", strerror(-rc));
				goto fail;
			}
			mapped_here[i] = 1;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, p->rings[i].fd) < 0) {
			rc = -errno;
			snprintf(err, errlen, "PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(errno));
			goto fail;
		}
		if ((rc = open_track(p, tid, p->cpus[i], fd, err, errlen)) < 0)
			goto fail;
		/* capture already on: this thread's sampling event joins in (opened off) */
		if (p->o.capture && p->sampling)
			ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	rec_i32_push(&p->attached, &p->n_attached, &p->cap_attached, tid);
	return 0;
fail:
	/* undo this thread's events, and the rings that were mapped on them */
	for (i = 0; i < p->n_cpus; i++) {
		if (!mapped_here[i])
			continue;
		munmap(p->rings[i].meta, p->rings[i].size + (size_t)sysconf(_SC_PAGESIZE));
		p->rings[i].meta = NULL;
		p->rings[i].data = NULL;
		p->rings[i].fd = -1;
	}
	for (k = first; k < p->n_fds; k++)
		close(p->fds[k]);
	p->n_fds = first;
	p->st.n_fds = (uint32_t)p->n_fds;
	p->n_sfds = first_s;
	return rc < 0 ? rc : -EINVAL;
}

void rec_perf_note_name(rec_perf *p, pid_t tid, const char *name)
{
	if (p && name)
		rec_perf_decoder_note_name(p->dec, tid, name);
}

int rec_perf_saw_thread(const rec_perf *p, pid_t tid)
{
	return rec_perf_decoder_saw_fork(p->dec, tid);
}

void rec_perf_set_clock_offset(rec_perf *p, int64_t offset_ns)
{
	if (!p)
		return;
	p->clock_off_ns = offset_ns;
	rec_perf_decoder_set_clock_offset(p->dec, offset_ns);
}

void rec_perf_set_stack_trim(rec_perf *p, rec_perf_stack_trim fn, void *ctx)
{
	if (p)
		rec_perf_decoder_set_trim(p->dec, fn, ctx);
}

void rec_perf_set_found(rec_perf *p, rec_perf_found_fn fn, void *ctx)
{
	if (p)
		rec_perf_decoder_set_found(p->dec, fn, ctx);
}

void rec_perf_disable(rec_perf *p)
{
	size_t i;
	if (!p)
		return;
	for (i = 0; i < p->n_fds; i++)
		ioctl(p->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (p->swfds)
		close_switches(p);
	p->sampling = 0;
}

int rec_perf_sampling(rec_perf *p, int on)
{
	size_t i;
	int rc = 0;

	if (!p || !p->o.capture)
		return -EINVAL;
	/* an inherited event's ioctl reaches its children too: every thread and process the
	 * target created since */
	for (i = 0; i < p->n_sfds; i++)
		if (ioctl(p->sfds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0 && !rc)
			rc = -errno;
	p->sampling = on;
	if (p->swfds) {
		/* the gate's switch events follow sampling (a start opens them after the sampling
		 * events, so no switch comes before the first sample can) */
		uint64_t when;
		int src = apply_switches(p, &when);
		if (src < 0) {
			/* sampling runs on; the switches stay off and the gate with them (the session
			 * says so in the trace: rec_perf_take_switch_error) */
			p->gate_open = 0;
			p->switch_err = src;
		}
	}
	return rc;
}

int rec_perf_take_switch_error(rec_perf *p)
{
	int e = p ? p->switch_err : 0;

	if (p)
		p->switch_err = 0;
	return e;
}

/* Copy every record of a ring up to its head into the arena, and free the ring space. */
static int read_ring(rec_perf *p, int ri)
{
	ring *rg = &p->rings[ri];
	uint64_t head, tail, mask = rg->size - 1;
	int n = 0;

	if (!rg->meta)
		return 0;
	head = __atomic_load_n(&rg->meta->data_head, __ATOMIC_ACQUIRE);
	tail = rg->meta->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & mask;
		uint8_t *dst;

		if (rg->size - off >= sizeof(h)) {
			memcpy(&h, rg->data + off, sizeof(h));
		} else {
			size_t first = (size_t)(rg->size - off);
			memcpy(&h, rg->data + off, first);
			memcpy((uint8_t *)&h + first, rg->data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail)
			break; /* cannot happen with a sane kernel; do not spin */
		if (h.type == PERF_RECORD_SAMPLE)
			rg->n_samples++;
		else if (h.type == PERF_RECORD_LOST || h.type == PERF_RECORD_LOST_SAMPLES ||
		         h.type == PERF_RECORD_THROTTLE || h.type == PERF_RECORD_UNTHROTTLE)
			rg->n_trouble++;
		/* system-wide: samples, mappings and switches of known outsiders are not even copied
		 * (at 1 kHz with DWARF stacks they are most of the bytes; after a stall, most of the
		 * catching up) */
		if (off + h.size <= rg->size && rec_perf_decoder_skip(p->dec, &rg->rs, rg->data + off, h.size)) {
			tail += h.size;
			continue;
		}
		/* out of memory: leave the rest in the ring; the kernel counts what it cannot write */
		if (GT_GROW(p->arena, p->cap_arena, p->n_arena + h.size) < 0 ||
		    GT_GROW(p->pend, p->cap_pend, p->n_pend + 1) < 0)
			break;
		dst = p->arena + p->n_arena;
		if (off + h.size <= rg->size) {
			memcpy(dst, rg->data + off, h.size);
		} else {
			size_t first = (size_t)(rg->size - off);
			memcpy(dst, rg->data + off, first);
			memcpy(dst + first, rg->data, h.size - first);
			/* the skip test reads every record in ring order (the switch pairs' state) */
			if (rec_perf_decoder_skip(p->dec, &rg->rs, dst, h.size)) {
				tail += h.size;
				continue;
			}
		}
		p->pend[p->n_pend].time_ns = rec_perf_record_time(p->dec, dst, h.size);
		p->pend[p->n_pend].seq = p->seq++;
		p->pend[p->n_pend].off = p->n_arena;
		p->pend[p->n_pend].size = h.size;
		p->pend[p->n_pend].ring = ri;
		p->n_pend++;
		p->n_arena += h.size;
		tail += h.size;
		n++;
	}
	__atomic_store_n(&rg->meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

static int cmp_pending(const void *a, const void *b)
{
	const pending *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int pending_before(const pending *x, const pending *y)
{
	return x->time_ns < y->time_ns || (x->time_ns == y->time_ns && x->seq < y->seq);
}

/* Sort the pending records by (time, seq). They arrive as a few runs already in that order:
 * what waited from the last round, then each ring's records, which the kernel writes in time
 * order (seq is the read order). Merging the runs pairwise costs n x log2(runs) moves: on a
 * 2-CPU box recording ~95 000 context switches a second (two records each), qsort here was
 * a quarter of the recorder's CPU time (perf record -g on gt-record, bench/gil_pingpong.py).
 * Records that break a ring's order (a record written from an interrupt in the middle of
 * another's output) only make more runs; the result is the same as qsort's. */
static void sort_pending(rec_perf *p)
{
	size_t n = p->n_pend, n_runs = 0, i;
	pending *src = p->pend, *dst;

	if (n < 2)
		return;
	if (GT_GROW(p->pend_tmp, p->cap_tmp, n) < 0) {
		qsort(p->pend, n, sizeof(*p->pend), cmp_pending);
		return;
	}
	for (i = 0; i < n; i++) {
		if (i == 0 || pending_before(&src[i], &src[i - 1])) {
			if (GT_GROW(p->runs, p->cap_runs, n_runs + 2) < 0) {
				qsort(p->pend, n, sizeof(*p->pend), cmp_pending);
				return;
			}
			p->runs[n_runs++] = i;
		}
	}
	p->runs[n_runs] = n;
	dst = p->pend_tmp;
	while (n_runs > 1) {
		size_t r, out = 0, k = 0;
		for (r = 0; r < n_runs; r += 2) {
			size_t a = p->runs[r], a_end = p->runs[r + 1];
			size_t b = a_end, b_end = r + 2 <= n_runs ? p->runs[r + 2] : a_end;
			p->runs[k++] = out;
			while (a < a_end && b < b_end)
				dst[out++] = pending_before(&src[b], &src[a]) ? src[b++] : src[a++];
			while (a < a_end)
				dst[out++] = src[a++];
			while (b < b_end)
				dst[out++] = src[b++];
		}
		p->runs[k] = n;
		n_runs = k;
		pending *t = src;
		src = dst;
		dst = t;
	}
	if (src != p->pend) { /* the sorted copy is in the other buffer: swap the two */
		size_t cap = p->cap_pend;
		p->pend_tmp = p->pend;
		p->cap_pend = p->cap_tmp;
		p->cap_tmp = cap;
		p->pend = src;
	}
}

int rec_perf_drain(rec_perf *p, int final)
{
	uint64_t round_ns, upto;
	size_t i, k, keep_bytes = 0;
	int n = 0;

	if (!p)
		return 0;
	round_ns = gtt_now_ns() - (uint64_t)p->clock_off_ns; /* on perf's clock, as the records */
	for (i = 0; i < (size_t)p->n_cpus; i++)
		n += read_ring(p, (int)i);
	/* decode in time order everything older than the round start minus the in-flight margin */
	upto = final ? UINT64_MAX : round_ns - ORDER_MARGIN_NS;
	sort_pending(p);
	if (!final)
		p->decoded_to_ns = upto + (uint64_t)p->clock_off_ns;
	for (i = 0; i < p->n_pend && p->pend[i].time_ns <= upto; i++)
		rec_perf_decode(p->dec, &p->rings[p->pend[i].ring].rs, p->arena + p->pend[i].off, p->pend[i].size);
	/* compact what waits for the next round (arena order = read order; keep it) */
	if (i > 0) {
		pending *rest = p->pend + i;
		size_t n_rest = p->n_pend - i;
		uint8_t *tmp = NULL;
		for (k = 0; k < n_rest; k++)
			keep_bytes += rest[k].size;
		if (keep_bytes && (tmp = malloc(keep_bytes)) != NULL) {
			size_t off = 0;
			for (k = 0; k < n_rest; k++) {
				memcpy(tmp + off, p->arena + rest[k].off, rest[k].size);
				rest[k].off = off;
				off += rest[k].size;
			}
			memcpy(p->arena, tmp, keep_bytes);
			free(tmp);
			p->n_arena = keep_bytes;
		} else if (!keep_bytes) {
			p->n_arena = 0;
		}
		memmove(p->pend, rest, n_rest * sizeof(*rest));
		p->n_pend = n_rest;
	}
	if (rec_perf_decoder_write_rc(p->dec) < 0)
		return rec_perf_decoder_write_rc(p->dec);
	return n;
}

uint64_t rec_perf_decoded_to(const rec_perf *p)
{
	return p ? p->decoded_to_ns : 0;
}

void rec_perf_get_stats(const rec_perf *p, rec_perf_stats *s)
{
	if (!p) {
		memset(s, 0, sizeof(*s));
		return;
	}
	*s = p->st;
	s->samples = s->lost = s->throttled = s->switches = s->switch_outs = s->sample_bytes = s->stack_bytes = s->foreign = 0;
	rec_perf_decoder_stats(p->dec, s);
}

int rec_perf_write_config(rec_perf *p, uint64_t time_ns)
{
	char text[256];
	gtt_health h = {
		.time_ns = time_ns, .end_ns = time_ns, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_CONFIG,
		.count = (uint64_t)p->n_cpus,
		.value = { p->st.ring_bytes, p->attr.sample_period, p->o.dwarf ? p->o.stack_bytes : 0, p->n_fds },
		.text = text,
	};

	snprintf(text, sizeof(text), "ring %zu KiB x %d CPUs, period %llu ns, %s, %s%s%s%s",
	         p->st.ring_bytes >> 10, p->n_cpus, (unsigned long long)p->attr.sample_period,
	         p->system ? "system-wide" : "per task", p->o.dwarf ? "dwarf" : "fp",
	         p->attr.exclude_kernel ? ", user only" : "",
	         (p->o.capture ? p->track.build_id : p->lean ? p->sw.build_id : p->attr.build_id) ? ""
	                                                                             : ", build-ids read from files",
	         p->o.capture ? ", sampling switched by capture control" : "");
	return rec_err_from_gtt(gtt_write_health(p->w, &h));
}

void rec_perf_close(rec_perf *p)
{
	int i;
	size_t k;
	long page = sysconf(_SC_PAGESIZE);

	if (!p)
		return;
	for (i = 0; i < p->n_cpus; i++)
		if (p->rings[i].meta)
			munmap(p->rings[i].meta, p->rings[i].size + (size_t)page);
	for (k = 0; k < p->n_fds; k++)
		close(p->fds[k]);
	if (p->swfds)
		close_switches(p);
	if (p->keeper_fd >= 0)
		close(p->keeper_fd);
	free(p->swfds);
	free(p->fds);
	free(p->sfds);
	free(p->rings);
	free(p->cpus);
	free(p->watch_busy);
	free(p->watch_smp);
	free(p->watch_trouble);
	free(p->attached);
	free(p->arena);
	free(p->pend);
	free(p->pend_tmp);
	free(p->runs);
	rec_perf_decoder_destroy(p->dec);
	rec_ptree_destroy(p->tree);
	free(p);
}

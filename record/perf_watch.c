/* perf_watch.c — the stall watch of system-wide sampling (rec_perf_watch, perf_sampler.h): each
 * CPU's busy time from /proc/stat against the samples its ring delivered; a CPU whose event
 * stopped firing is switched off and on again, and a health note says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gt_util.h"
#include "perf_priv.h"
#include "rec_err.h"

/* Each online CPU's busy time from /proc/stat, in clock ticks (user and nice, and with kernel
 * samples system, irq and softirq: what a cpu-clock event that excludes the idle task samples;
 * steal is time the CPU did not run): 0, or -1 when it cannot be read. */
static int read_busy(const rec_perf *p, uint64_t *busy)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[512];
	int found = 0;

	if (!f)
		return -1;
	memset(busy, 0, (size_t)p->n_cpus * sizeof(*busy));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long user, nice, sys, idle, iowait, irq, softirq;
		int cpu, i;
		if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9' ||
		    sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &sys, &idle, &iowait, &irq,
		           &softirq) != 8)
			continue;
		for (i = 0; i < p->n_cpus && p->cpus[i] != cpu; i++)
			;
		if (i == p->n_cpus)
			continue;
		busy[i] = user + nice + (p->attr.exclude_kernel ? 0 : sys + irq + softirq);
		found++;
	}
	fclose(f);
	return found == p->n_cpus ? 0 : -1;
}

/* GT_RECORD_TEST_STALL=CPU:SECONDS (tests): stop that CPU's sampling event SECONDS after the
 * watch began, as the kernel was seen to do on its own (record_stall.sh). */
static void test_stall(rec_perf *p, uint64_t now_ns)
{
	if (p->stall_cpu < 0 || p->stall_at_ns || now_ns < p->stall_after_ns)
		return;
	for (int i = 0; i < p->n_cpus; i++)
		if (p->cpus[i] == p->stall_cpu && p->rings[i].fd >= 0)
			ioctl(p->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	p->stall_at_ns = now_ns;
}

int rec_perf_watch(rec_perf *p, uint64_t now_ns)
{
	if (!p || !p->system || p->watch_off)
		return 0;
	if (p->o.capture && !p->sampling) {
		p->watch_from_ns = 0; /* sampling is off on purpose: a new window when it is on again */
		return 0;
	}
	if (!p->watch_busy) {
		const char *t = getenv("GT_RECORD_TEST_STALL");
		double after = 0;
		p->stall_cpu = -1;
		if (t && sscanf(t, "%d:%lf", &p->stall_cpu, &after) == 2 && after >= 0)
			p->stall_after_ns = now_ns + gt_s_to_ns(after);
		else
			p->stall_cpu = -1;
		p->watch_busy = calloc((size_t)p->n_cpus, sizeof(*p->watch_busy));
		p->watch_smp = calloc((size_t)p->n_cpus, sizeof(*p->watch_smp));
		p->watch_trouble = calloc((size_t)p->n_cpus, sizeof(*p->watch_trouble));
		if (!p->watch_busy || !p->watch_smp || !p->watch_trouble) {
			p->watch_off = 1;
			return 0;
		}
	}
	test_stall(p, now_ns);
	uint64_t window = (uint64_t)REC_PERF_WATCH_PERIODS * p->attr.sample_period;
	if (window < REC_PERF_WATCH_NS)
		window = REC_PERF_WATCH_NS;
	if (p->watch_from_ns && now_ns < p->watch_from_ns + window)
		return 0;
	uint64_t busy[p->n_cpus];
	if (read_busy(p, busy) < 0) {
		p->watch_off = 1;
		return 0;
	}
	long tck = sysconf(_SC_CLK_TCK);
	double tick_s = 1.0 / (double)(tck > 0 ? tck : 100), hz = 1e9 / (double)p->attr.sample_period;
	int rc = 0;
	for (int i = 0; p->watch_from_ns && i < p->n_cpus; i++) {
		ring *rg = &p->rings[i];
		double busy_s = (double)(busy[i] - p->watch_busy[i]) * tick_s;
		double want = busy_s * hz;
		uint64_t got = rg->n_samples - p->watch_smp[i];
		/* losses and throttling explain a shortfall of their own (and are reported) */
		if (rg->fd < 0 || busy[i] < p->watch_busy[i] || rg->n_trouble != p->watch_trouble[i] || want < REC_PERF_WATCH_MIN ||
		    (double)got * 10 >= want)
			continue;
		/* the kernel stopped firing this CPU's timer (seen on a VM: switches went on, no
		 * sample, nothing lost or throttled): off and on again restarts it */
		ioctl(rg->fd, PERF_EVENT_IOC_DISABLE, 0);
		ioctl(rg->fd, PERF_EVENT_IOC_ENABLE, 0);
		p->st.rearms++;
		char text[384]; /* (the sentence is ~240 bytes with its numbers) */
		snprintf(text, sizeof(text),
		         "CPU %d delivered %llu samples in %.2f s where %.2f s of busy time wanted ~%.0f, nothing lost or "
		         "throttled: its " GTT_NOTE_SAMPLING_STOPPED " and was re-armed; samples on that CPU are "
		         "missing for this stretch and possibly part of the one before",
		         p->cpus[i], (unsigned long long)got, (double)(now_ns - p->watch_from_ns) / 1e9, busy_s, want);
		gtt_health h = { .time_ns = p->watch_from_ns, .end_ns = now_ns, .source = GTT_SRC_PERF,
		                 .kind = GTT_HEALTH_NOTE, .count = got,
		                 .value = { (uint64_t)p->cpus[i], (uint64_t)want }, .text = text };
		if (!rc)
			rc = rec_err_from_gtt(gtt_write_health(p->w, &h));
	}
	p->watch_from_ns = now_ns;
	for (int i = 0; i < p->n_cpus; i++) {
		p->watch_busy[i] = busy[i];
		p->watch_smp[i] = p->rings[i].n_samples;
		p->watch_trouble[i] = p->rings[i].n_trouble;
	}
	return rc;
}

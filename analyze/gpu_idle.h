/* gpu_idle.h — analyze/-internal: the shared context of the GPU report (gpu.c) and its time-based
 * parts in gpu_idle.c: busy % over time, idle gaps with GPU-idle blame, kernel launch sites.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_GPU_IDLE_H
#define ANA_GPU_IDLE_H

#include <stdio.h>
#include "model.h"

enum { ANA_GPU_KERNEL = 0, ANA_GPU_COPY = 1, ANA_GPU_MEMSET = 2 };

/* One piece of device work (kernel, copy or memset) on a physical device. */
typedef struct ana_gpu_act {
	uint64_t start_ns, end_ns;
	int dev;               /* physical device index */
	int type;              /* ANA_GPU_* */
	size_t idx;            /* index into the model's kernels/memcpys/memsets */
} ana_gpu_act;

typedef struct ana_gpu_span {
	uint64_t start_ns, end_ns;
	int dev;
} ana_gpu_span;

/* (pid, device ordinal) as the agent saw it, mapped to a physical device (same UUID = same GPU). */
typedef struct ana_gpu_dev {
	uint32_t pid, device;
	const char *uuid, *name;
	int index;
} ana_gpu_dev;

typedef struct ana_gpu_ctx {
	const ana_model *m;
	size_t *info;          /* m->cuda_devices indices sorted by (pid, device, record order) */
	void *dev_table, *uuid_table; /* gpu.c's lookups of devs by (pid, device) and by UUID */
	ana_gpu_act *acts;     /* sorted by (dev, start, end, type, idx) */
	size_t n_acts;
	ana_gpu_span *busy;    /* union of acts per device: disjoint, sorted by (dev, start) */
	size_t n_busy;
	ana_gpu_dev *devs;
	size_t n_devs, cap_devs;
	int n_phys;
} ana_gpu_ctx;

/* "12.345" (ms with 3 decimals) into buf. */
void ana_gpu_ms(char *buf, size_t len, uint64_t ns);
/* Busy % per device: whole recording, between first and last work, and per time bucket. */
void ana_gpu_report_busy(const ana_gpu_ctx *g, FILE *out);
/* Idle time between device work: gap-length histogram, what every host thread did during it
 * (all gaps together), and the top_n longest gaps one by one. */
void ana_gpu_report_idle(const ana_gpu_ctx *g, FILE *out, int top_n);
/* For the kernels names[0..n) (model strings; shown = printable names): launching threads, API
 * calls and CPU stacks nearest each launch, through the correlation id. */
void ana_gpu_report_launches(const ana_gpu_ctx *g, FILE *out, const char *const *names,
                             const char *const *shown, size_t n);

#endif

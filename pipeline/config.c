/* config.c — the pipeline's knobs: defaults, text setters shared by the CLI and the Python driver, checks. */
#include "pipeline.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pl_config_defaults(pl_config *c)
{
	*c = (pl_config){ 0 };
	strcpy(c->backend, "cpu");
	c->targets = 5;
	c->drafters = 3;
	c->queue_depth = 60;
	c->min_ready = 9;
	c->sync_every = 1;
	c->alloc_cached = 0;
	c->seed = 1;
	c->gpus[0] = 0;
	c->n_gpus = 1;
	c->sample_ms = 10;
	c->steps = -1;   /* -1: not given (resolved later) */
	c->seconds = -1;
}

pl_config *pl_config_new(void)
{
	pl_config *c = malloc(sizeof *c);
	if (c)
		pl_config_defaults(c);
	return c;
}

void pl_config_free(pl_config *c)
{
	free(c);
}

const char *pl_strerror(int rc)
{
	switch (rc) {
	case 0: return "success";
	case PL_EUSAGE: return "bad usage";
	case PL_ENODEV: return "no usable GPU";
	case PL_EBACKEND: return "backend failure";
	case PL_ENOMEM: return "out of memory";
	case PL_EIO: return "I/O error";
	default: return "unknown error";
	}
}

static int parse_int(const char *key, const char *s, long long lo, long long hi, long long *out,
                     char *err, size_t errlen)
{
	char *end = NULL;
	errno = 0;
	long long v = s && *s ? strtoll(s, &end, 10) : 0;
	if (!s || !*s || errno || !end || *end) {
		snprintf(err, errlen, "--%s wants an integer, got '%s'", key, s ? s : "");
		return PL_EUSAGE;
	}
	if (v < lo || v > hi) {
		snprintf(err, errlen, "--%s %lld is out of range [%lld, %lld]", key, v, lo, hi);
		return PL_EUSAGE;
	}
	*out = v;
	return 0;
}

static int parse_num(const char *key, const char *s, double lo, double hi, double *out, char *err,
                     size_t errlen)
{
	char *end = NULL;
	errno = 0;
	double v = s && *s ? strtod(s, &end) : 0;
	if (!s || !*s || errno || !end || *end || !isfinite(v)) {
		snprintf(err, errlen, "--%s wants a number, got '%s'", key, s ? s : "");
		return PL_EUSAGE;
	}
	if (v < lo || v > hi) {
		snprintf(err, errlen, "--%s %g is out of range [%g, %g]", key, v, lo, hi);
		return PL_EUSAGE;
	}
	*out = v;
	return 0;
}

static int parse_gpus(pl_config *c, const char *s, char *err, size_t errlen)
{
	char buf[512], *save = NULL;
	int n = 0;
	if (!s || !*s || strlen(s) >= sizeof buf) {
		snprintf(err, errlen, "--gpus wants a list like 0,1,2");
		return PL_EUSAGE;
	}
	strcpy(buf, s);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long long v;
		if (n == PL_MAX_GPUS) {
			snprintf(err, errlen, "--gpus lists more than %d devices", PL_MAX_GPUS);
			return PL_EUSAGE;
		}
		if (parse_int("gpus", tok, 0, 1023, &v, err, errlen))
			return PL_EUSAGE;
		c->gpus[n++] = (int)v;
	}
	if (n == 0 || s[strlen(s) - 1] == ',' || s[0] == ',' || strstr(s, ",,")) {
		snprintf(err, errlen, "--gpus wants a list like 0,1,2, got '%s'", s);
		return PL_EUSAGE;
	}
	c->n_gpus = n;
	return 0;
}

/* key -> (field, range) for the integer knobs */
typedef struct int_knob {
	const char *key;
	size_t off;
	int is64;
	long long lo, hi;
} int_knob;

#define KNOB(k, f, lo, hi) { k, offsetof(pl_config, f), sizeof(((pl_config *)0)->f) == 8, lo, hi }
static const int_knob int_knobs[] = {
	KNOB("targets", targets, 1, 256),
	KNOB("drafters", drafters, 1, 256),
	KNOB("queue-depth", queue_depth, 1, 1000000),
	KNOB("min-ready", min_ready, 0, 1000000),
	KNOB("sync-every", sync_every, 0, 1000000000),
	KNOB("steps", steps, 0, 1000000000000LL),
	KNOB("hidden", hidden, 8, 65536),
	KNOB("layers", layers, 1, 1000),
	KNOB("seq-min", seq_min, 1, 1000000),
	KNOB("seq-max", seq_max, 1, 1000000),
	KNOB("batch", batch, 1, PL_MAX_BATCH),
	KNOB("chunk", chunk, 1, PL_MAX_CHUNK),
	KNOB("sample-ms", sample_ms, 1, 60000),
};

int pl_config_set(pl_config *c, const char *key_in, const char *value, char *err, size_t errlen)
{
	char key[64];
	size_t i;
	long long v;

	if (!key_in || strlen(key_in) >= sizeof key) {
		snprintf(err, errlen, "unknown option");
		return PL_EUSAGE;
	}
	for (i = 0; key_in[i]; i++)
		key[i] = key_in[i] == '_' ? '-' : key_in[i];
	key[i] = 0;

	if (strcmp(key, "backend") == 0) {
		if (!value || (strcmp(value, "cpu") != 0 && strcmp(value, "cuda") != 0)) {
			snprintf(err, errlen, "unknown backend '%s' (cpu or cuda)", value ? value : "");
			return PL_EUSAGE;
		}
		strcpy(c->backend, value);
		return 0;
	}
	if (strcmp(key, "alloc") == 0) {
		if (value && strcmp(value, "churn") == 0)
			c->alloc_cached = 0;
		else if (value && strcmp(value, "cached") == 0)
			c->alloc_cached = 1;
		else {
			snprintf(err, errlen, "--alloc wants churn or cached, got '%s'", value ? value : "");
			return PL_EUSAGE;
		}
		return 0;
	}
	if (strcmp(key, "gpus") == 0)
		return parse_gpus(c, value, err, errlen);
	if (strcmp(key, "seconds") == 0)
		return parse_num(key, value, 0, 86400 * 7, &c->seconds, err, errlen);
	if (strcmp(key, "python-work") == 0)
		return parse_num(key, value, 0, 60000, &c->python_work_ms, err, errlen);
	if (strcmp(key, "seed") == 0) {
		if (parse_int(key, value, 0, 4294967295LL, &v, err, errlen))
			return PL_EUSAGE;
		c->seed = (uint32_t)v;
		return 0;
	}
	for (i = 0; i < sizeof int_knobs / sizeof int_knobs[0]; i++) {
		const int_knob *k = &int_knobs[i];
		if (strcmp(key, k->key) != 0)
			continue;
		if (parse_int(key, value, k->lo, k->hi, &v, err, errlen))
			return PL_EUSAGE;
		if (k->is64)
			*(int64_t *)((char *)c + k->off) = v;
		else
			*(int *)((char *)c + k->off) = (int)v;
		return 0;
	}
	snprintf(err, errlen, "unknown option --%s", key);
	return PL_EUSAGE;
}

int pl_config_resolve(pl_config *c, char *err, size_t errlen)
{
	int cuda = strcmp(c->backend, "cuda") == 0;

	/* the CPU defaults run in CI in seconds; the CUDA ones give the GPU real work */
	if (!c->hidden)
		c->hidden = cuda ? 2048 : 128;
	if (!c->layers)
		c->layers = cuda ? 20 : 8;
	if (!c->seq_min)
		c->seq_min = cuda ? 128 : 16;
	if (!c->seq_max)
		c->seq_max = cuda ? 2048 : 96;
	if (c->seq_min > c->seq_max && c->seq_max && c->seq_min) {
		snprintf(err, errlen, "--seq-min %d is larger than --seq-max %d", c->seq_min, c->seq_max);
		return PL_EUSAGE;
	}
	if (!c->batch)
		c->batch = cuda ? 8 : 4;
	if (!c->chunk)
		c->chunk = cuda ? 64 : 32;
	if (c->steps < 0 && c->seconds < 0)
		c->seconds = cuda ? 10 : 2;
	if (c->steps < 0)
		c->steps = 0;
	if (c->seconds < 0)
		c->seconds = 0;
	if (c->steps == 0 && c->seconds == 0) {
		snprintf(err, errlen, "--steps 0 and --seconds 0: the run would never end");
		return PL_EUSAGE;
	}
	if (c->hidden % 8) {
		snprintf(err, errlen, "--hidden %d must be a multiple of 8", c->hidden);
		return PL_EUSAGE;
	}
	if (c->min_ready > c->queue_depth) {
		snprintf(err, errlen, "--min-ready %d is larger than --queue-depth %d: consumers would wait forever",
		         c->min_ready, c->queue_depth);
		return PL_EUSAGE;
	}
	if (c->targets < 1 || c->drafters < 1) {
		snprintf(err, errlen, "need at least one target and one drafter (got %d and %d)", c->targets, c->drafters);
		return PL_EUSAGE;
	}
	if ((int64_t)c->batch * c->seq_max > 1 << 28 ||
	    (int64_t)c->batch * c->seq_max * c->hidden > (int64_t)1 << 36) {
		snprintf(err, errlen, "--batch %d x --seq-max %d x --hidden %d is too large", c->batch, c->seq_max, c->hidden);
		return PL_EUSAGE;
	}
	return 0;
}

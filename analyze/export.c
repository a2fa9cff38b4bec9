/* export.c — `gt-analyze export`: format dispatch, the command, and the key map the
 * exporters use to give frames, locations and tracks dense ids. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "export.h"
#include "fold.h"
#include "gpu_sum.h"
#include "gt_util.h"
#include "gtt.h"
#include "model_priv.h"
#include "outfile.h"
#include "sample_sum.h"

int ana_export_format_parse(const char *name)
{
	if (!name)
		return -1;
	if (strcmp(name, "folded") == 0 || strcmp(name, "fold") == 0)
		return ANA_EXPORT_FOLDED;
	if (strcmp(name, "speedscope") == 0)
		return ANA_EXPORT_SPEEDSCOPE;
	if (strcmp(name, "chrome") == 0 || strcmp(name, "perfetto") == 0)
		return ANA_EXPORT_CHROME;
	if (strcmp(name, "pprof") == 0)
		return ANA_EXPORT_PPROF;
	return -1;
}

int ana_export_format_of_path(const char *path)
{
	static const struct { const char *suffix; int format; } sfx[] = {
		{ ".speedscope.json", ANA_EXPORT_SPEEDSCOPE }, { ".chrome.json", ANA_EXPORT_CHROME },
		{ ".perfetto.json", ANA_EXPORT_CHROME }, { ".trace.json", ANA_EXPORT_CHROME },
		{ ".json", ANA_EXPORT_CHROME }, { ".pb.gz", ANA_EXPORT_PPROF }, { ".pprof", ANA_EXPORT_PPROF },
		{ ".pprof.gz", ANA_EXPORT_PPROF }, { ".pb", ANA_EXPORT_PPROF }, { ".folded", ANA_EXPORT_FOLDED },
		{ ".fold", ANA_EXPORT_FOLDED }, { ".txt", ANA_EXPORT_FOLDED },
	};
	size_t n = path ? strlen(path) : 0;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t k = strlen(sfx[i].suffix);
		if (n > k && strcasecmp(path + n - k, sfx[i].suffix) == 0)
			return sfx[i].format;
	}
	return -1;
}

void ana_export_opts_init(ana_export_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->gil = -1;
}

int ana_export(const ana_model *m, int format, const ana_export_opts *o, FILE *out)
{
	switch (format) {
	case ANA_EXPORT_SPEEDSCOPE:
		return ana_export_speedscope(m, o, out);
	case ANA_EXPORT_CHROME:
		return ana_export_chrome(m, o, out);
	case ANA_EXPORT_PPROF:
		return ana_export_pprof(m, o, out);
	case ANA_EXPORT_FOLDED: {
		ana_fold_opts fo;
		ana_folded fd;
		ana_fold_opts_init(&fo);
		fo.gil = o ? o->gil : -1;
		int rc = ana_fold(m, &fo, &fd);
		if (rc < 0)
			return rc;
		rc = ana_fold_write(&fd, out);
		ana_folded_free(&fd);
		return rc;
	}
	}
	return GTT_EINVAL;
}

const char *ana_export_thread_name(const ana_model *m, const ana_thread *t, char *buf, size_t cap)
{
	(void)m;
	if (t->name && t->name[0])
		snprintf(buf, cap, "%s", t->name);
	else
		snprintf(buf, cap, "tid %u", t->tid);
	return buf;
}

/* ---- per-thread sample lists ---- */

int ana_thread_sample_lists(const ana_model *m, int gil, size_t **first_out, size_t **next_out)
{
	size_t *first = malloc((m->threads.n + 1) * sizeof(*first));
	size_t *next = malloc((m->samples.n + 1) * sizeof(*next));
	if (!first || !next) {
		free(first);
		free(next);
		return GTT_ENOMEM;
	}
	for (size_t t = 0; t < m->threads.n; t++)
		first[t] = SIZE_MAX;
	/* built backwards so that each list stays in sample (time) order */
	for (size_t i = m->samples.n; i-- > 0;) {
		const ana_sample *s = &m->samples.v[i];
		if (s->thread_idx >= m->threads.n || s->stack_id >= m->stacks.n || (gil >= 0 && !(gil & 1 << s->cls)))
			continue;
		next[i] = first[s->thread_idx];
		first[s->thread_idx] = i;
	}
	*first_out = first;
	*next_out = next;
	return 0;
}

/* ---- key map ---- */

/* Keys are stored back to back in words; the model's open-addressing id table finds them. */
struct ana_keymap {
	ana_idtable table;
	size_t *key_off;        /* per id: offset of its key in words */
	uint32_t *key_len;
	size_t n, cap, cap_len;
	uint32_t *words;
	size_t n_words, cap_words;
};

typedef struct keymap_key {
	const uint32_t *words;
	uint32_t n;
} keymap_key;

ana_keymap *ana_keymap_create(void)
{
	return calloc(1, sizeof(ana_keymap));
}

void ana_keymap_destroy(ana_keymap *km)
{
	if (!km)
		return;
	ana_idtable_free(&km->table);
	free(km->key_off);
	free(km->key_len);
	free(km->words);
	free(km);
}

static int keymap_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_keymap *km = ctx;
	const keymap_key *k = key;
	return km->key_len[id] == k->n &&
	       (k->n == 0 || memcmp(km->words + km->key_off[id], k->words, k->n * sizeof(*k->words)) == 0);
}

int64_t ana_keymap_get(ana_keymap *km, const uint32_t *key, uint32_t n, int *is_new)
{
	keymap_key k = { key, n };
	uint32_t *slot = ana_idtable_slot(&km->table, ana_hash_words(key, n, n), keymap_eq, &k, km);
	if (is_new)
		*is_new = 0;
	if (!slot)
		return -1;
	if (*slot)
		return *slot - 1;
	if (GT_GROW(km->key_off, km->cap, km->n + 1) < 0 || GT_GROW(km->key_len, km->cap_len, km->n + 1) < 0 ||
	    GT_GROW(km->words, km->cap_words, km->n_words + n) < 0)
		return -1;
	if (km->n >= UINT32_MAX - 1)
		return -1;
	uint32_t id = (uint32_t)km->n++;
	km->key_off[id] = km->n_words;
	km->key_len[id] = n;
	if (n)
		memcpy(km->words + km->n_words, key, n * sizeof(*key));
	km->n_words += n;
	*slot = id + 1;
	km->table.n++;
	if (is_new)
		*is_new = 1;
	return id;
}

int64_t ana_keymap_str(ana_keymap *km, const char *s, int *is_new)
{
	/* Strings become word keys: length first, then the bytes packed four to a word. */
	size_t len = strlen(s);
	size_t nw = 1 + (len + 3) / 4;
	uint32_t stackbuf[64];
	uint32_t *w = nw <= 64 ? stackbuf : malloc(nw * sizeof(*w));
	if (!w || len > UINT32_MAX)
		return -1;
	w[nw - 1] = 0;
	w[0] = (uint32_t)len;
	memcpy(w + 1, s, len);
	int64_t id = ana_keymap_get(km, w, (uint32_t)nw, is_new);
	if (w != stackbuf)
		free(w);
	return id;
}

size_t ana_keymap_count(const ana_keymap *km)
{
	return km->n;
}

/* ---- the command ---- */

static void export_usage(FILE *f)
{
	fputs("usage: gt-analyze export TRACE --format FORMAT [-o FILE] [OPTIONS]\n\n"
	      "The trace in a format other tools read:\n"
	      "  folded      FlameGraph text, one \"root;...;leaf COUNT\" line per stack\n"
	      "  speedscope  speedscope JSON: one sampled profile per thread, weights in ns\n"
	      "  chrome      Chrome Trace Event JSON for Perfetto / chrome://tracing: stacks as nested\n"
	      "              slices per thread, GIL class, CUDA API calls, kernels per stream, NVTX, counters\n"
	      "  pprof       gzipped profile.proto for pprof, Pyroscope, Parca (labels thread, tid, pid, gil)\n\n"
	      "  -f, --format FORMAT  one of the above; without it the format follows FILE's name\n"
	      "                       (.folded .fold .txt, .speedscope.json, .json, .pb.gz .pprof .pb),\n"
	      "                       folded on stdout, and any other name is refused\n"
	      "  -o FILE              write to FILE instead of stdout\n"
	      "  --gil WHICH          only samples of these GIL classes: " ANA_GIL_WORDS "\n"
	      "                       (held = python,native-gil; released = nogil,wait)\n" ANA_CLI_OPTS_HELP
	      "  -h, --help           this help\n\n"
	      "chrome writes every event: without --from/--to it refuses a trace over 256 MiB.\n", f);
}

int ana_cmd_export(int argc, char **argv)
{
	enum { O_GIL = 1 };
	static const struct option lopts[] = {
		{"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
		{"gil", required_argument, NULL, O_GIL}, {"help", no_argument, NULL, 'h'}, ANA_CLI_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	ana_opts ao;
	ana_export_opts eo;
	const char *out_path = NULL, *fmt_name = NULL;
	int c, status, rc;
	ana_model *m = NULL;
	FILE *out = NULL;
	ana_out *of = NULL;
	ana_sscope *sc = NULL;
	char oerr[512];
	ana_opts_init(&ao);
	ana_export_opts_init(&eo);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", lopts, NULL)) != -1) {
		if ((rc = ana_cli_opt("export", c, optarg, &ao)) != 0) {
			if (rc < 0)
				return GT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'f': fmt_name = optarg; break;
		case 'o': out_path = optarg; break;
		case O_GIL:
			if ((eo.gil = ana_gil_parse(optarg)) < -1)
				return ana_cli_usage_error("export", "--gil wants " ANA_GIL_WORDS ", not '%s'", optarg);
			break;
		case 'h': export_usage(stdout); return GT_EXIT_OK;
		default: return ana_cli_usage_error("export", "unknown option or missing value: %s", argv[optind - 1]);
		}
	}
	int format = ANA_EXPORT_FOLDED;
	if (fmt_name && (format = ana_export_format_parse(fmt_name)) < 0)
		return ana_cli_usage_error("export", "unknown format '%s' (folded, speedscope, chrome, pprof)", fmt_name);
	/* without --format the file's name says it; a name that does not is refused, never guessed
	 * (x.pb.gz once got folded text) */
	if (!fmt_name && out_path && strcmp(out_path, "-") != 0 &&
	    (format = ana_export_format_of_path(out_path)) < 0)
		return ana_cli_usage_error("export", "cannot tell the format from '%s' (.folded, .speedscope.json, "
		                           ".json, .pb.gz); give --format", out_path);
	if (optind != argc - 1)
		return ana_cli_usage_error("export", optind == argc ? "missing TRACE" : "one TRACE only");
	const char *path = argv[optind];
	int load_status;
	/* Chrome JSON holds every event, about ten times the trace's bytes, and Perfetto's UI stops
	 * near 2 GB: past a bounded size the export wants a window (even --from 0 says so) */
	struct stat st;
	if (format == ANA_EXPORT_CHROME && !ao.has_from && !ao.has_to && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > ANA_EXPORT_CHROME_MAX_BYTES) {
		fprintf(stderr, "gt-analyze export: %s: %.0f MiB of trace would make about %.0f MiB of Chrome JSON (every "
		        "event); give a window with --from S --to S (or --from 0 for all of it)\n", path,
		        (double)st.st_size / 1048576.0, 10.0 * (double)st.st_size / 1048576.0);
		return GT_EXIT_USAGE;
	}
	/* only Chrome's timeline walks the CUDA records: the other formats are profiles of the
	 * samples, and the loader keeps no sample for them (memory follows distinct stacks and
	 * threads): folded text and pprof take their sums by stack, speedscope takes each sample
	 * as the loader merges it, in time order, and sets it aside by thread (ana_sscope) */
	if (format == ANA_EXPORT_SPEEDSCOPE) {
		if (!(sc = ana_sscope_new(eo.gil, 0))) {
			fprintf(stderr, "gt-analyze export: out of memory\n");
			return GT_EXIT_BROKEN;
		}
		ao.sample_sink = ana_sscope_sample;
		ao.sample_sink_ctx = sc;
	}
	if (format != ANA_EXPORT_CHROME)
		ana_fold_load_opts(&ao, ANA_WEIGHT_SAMPLES, 0);
	if (!(m = ana_cli_load_quiet(path, &ao, &load_status))) {
		ana_sscope_free(sc);
		return load_status;
	}
	/* a thread's samples merged out of time order (records that came later in the file than its
	 * chunk index promised: a hand-made file) would be written in that order, and the merge saw
	 * them late: such a trace is read again keeping every sample, as before this streamed */
	if (sc && !ana_sscope_error(sc)[0] && ana_sscope_unordered(sc)) {
		ana_model_free(m);
		ana_sscope_free(sc);
		sc = NULL;
		ao.sample_sink = NULL;
		ao.sample_sink_ctx = NULL;
		ao.stream_samples = 0; /* (ana_fold_load_opts with each_sample) */
		if (!(m = ana_cli_load_quiet(path, &ao, &load_status)))
			return load_status;
	}
	ana_cli_warnings(m);
	status = GT_EXIT_BROKEN;
	/* a full disk while the samples were set aside: said before any output is made */
	if (sc && ana_sscope_error(sc)[0]) {
		fprintf(stderr, "gt-analyze export: %s: setting the samples aside: %s\n", path, ana_sscope_error(sc));
		goto out;
	}
	uint64_t n_gpu = m->cuda_streamed && m->gpu ? m->gpu->n_kernels + m->gpu->n_apis : m->kernels.n + m->apis.n;
	const ana_sample_sum *ss = m->samples_streamed ? ana_sample_sum_of(m) : NULL;
	uint64_t n_samples = ana_model_n_samples(m);
	if (n_samples == 0 && n_gpu == 0) {
		fprintf(stderr, "gt-analyze export: %s: the trace has no samples and no GPU activity\n", path);
		goto out;
	}
	if (eo.gil >= 0 && n_samples) {
		size_t kept = 0;
		for (size_t i = 0; i < m->samples.n && !kept; i++)
			kept += (eo.gil & 1 << m->samples.v[i].cls) != 0;
		for (size_t i = 0; ss && i < ss->rows.n && !kept; i++)
			kept += (eo.gil & 1 << ss->rows.v[i].cls) != 0;
		if (!kept)
			fprintf(stderr, "gt-analyze export: warning: none of the %llu samples is of the --gil "
			                "classes; the profile has no samples\n", (unsigned long long)n_samples);
	}
	const char *inputs[] = { path, NULL };
	if (!(of = ana_out_open(out_path, inputs, oerr, sizeof(oerr)))) {
		fprintf(stderr, "gt-analyze export: %s\n", oerr);
		goto out;
	}
	out = ana_out_stream(of);
	rc = sc ? ana_sscope_write(sc, m, out) : ana_export(m, format, &eo, out);
	if (rc == 0 && fflush(out) != 0)
		rc = GTT_EIO;
	if (rc < 0 && sc && ana_sscope_error(sc)[0]) {
		fprintf(stderr, "gt-analyze export: %s: reading back the samples set aside: %s\n", path,
		        ana_sscope_error(sc));
		goto out;
	}
	if (rc < 0) {
		fprintf(stderr, "gt-analyze export: writing %s: %s\n", out_path ? out_path : "stdout",
		        rc == GTT_EIO ? strerror(errno) : gtt_strerror(rc));
		goto out;
	}
	status = load_status;
out:
	if (ana_out_close(of, status != GT_EXIT_BROKEN, oerr, sizeof(oerr)) < 0) {
		fprintf(stderr, "gt-analyze export: %s\n", oerr);
		status = GT_EXIT_BROKEN;
	}
	ana_model_free(m);
	ana_sscope_free(sc);
	return status;
}

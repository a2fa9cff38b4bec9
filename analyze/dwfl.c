/* dwfl.c — symbolization and offline DWARF unwinding with libdw/libdwfl (see dwfl.h).
 *
 * Binaries ("files") are found once, by build-id or path, and shared by every address space
 * ("space": one pid, one Dwfl). Each executable mapping becomes a module of its space's Dwfl,
 * reported with dwfl_report_elf at the load bias the mapping implies. Unwinding uses
 * dwfl_attach_state with callbacks that serve the sample's registers and stack copy (and the
 * mapped files' contents), set per sample on the space's one Dwfl. Symbolization results are
 * cached by (file, link-time address), so equal binaries in many processes are looked up once,
 * in a Dwfl of the file's own (dwfl_sym.c: one binary's DWARF open at a time). */
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwfl_priv.h"

/* ---- address spaces ---- */

static int space_eq(uint32_t id, const void *key, void *ctx)
{
	const sym_space *sp = ((ana_sym *)ctx)->spaces.v[id];
	return ((uint64_t)sp->gen << 32 | sp->pid) == *(const uint64_t *)key;
}

/* Which image of pid ran at time t: the number of its execs at or before t. */
static uint32_t exec_gen(const ana_sym *s, uint32_t pid, uint64_t t)
{
	/* first exec of (pid, time > t) minus first exec of pid, both by binary search */
	size_t lo = 0, hi = s->n_execs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->execs[2 * mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	hi = s->n_execs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->execs[2 * mid] == pid && s->execs[2 * mid + 1] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint32_t)(lo - first);
}

/* Time window [lo, hi) of image gen of pid. */
static void exec_window(const ana_sym *s, uint32_t pid, uint32_t gen, uint64_t *lo, uint64_t *hi)
{
	uint32_t k = 0;
	*lo = 0;
	*hi = UINT64_MAX;
	for (size_t i = 0; i < s->n_execs; i++) {
		if (s->execs[2 * i] != pid)
			continue;
		k++;
		if (k == gen)
			*lo = s->execs[2 * i + 1];
		if (k == gen + 1)
			*hi = s->execs[2 * i + 1];
	}
}

static int mod_cmp(const void *a, const void *b)
{
	const sym_mod *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

const sym_mod *ana_sym_mod_find(const sym_space *sp, uint64_t addr)
{
	size_t lo = 0, hi = sp->n_mods;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sp->mods[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < sp->n_mods && sp->mods[lo].start <= addr)
		return &sp->mods[lo];
	return NULL;
}

/* Range of mapping indices of pid in map_order. */
static void pid_mappings(const ana_sym *s, uint32_t pid, size_t *first, size_t *n)
{
	const ana_model *m = s->m;
	size_t lo = 0, hi = m->mappings.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->mappings.v[s->map_order[mid]].m.pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < m->mappings.n && m->mappings.v[s->map_order[end]].m.pid == pid)
		end++;
	*first = lo;
	*n = end - lo;
}

/* Mapping indices (into map_order) of image gen of pid: those recorded between its exec and
 * the next. An image without mappings of its own (a fork not yet exec'd, a recorder that
 * wrote them before the exec record) runs the one before it, or its parent's. */
static size_t image_mappings(const ana_sym *s, uint32_t pid, uint32_t gen, uint32_t *out)
{
	const ana_model *m = s->m;
	for (int depth = 0; depth < 8; depth++) {
		size_t first, n, k;
		pid_mappings(s, pid, &first, &n);
		for (uint32_t g = gen + 1; g-- > 0;) {
			uint64_t lo, hi;
			exec_window(s, pid, g, &lo, &hi);
			k = 0;
			for (size_t i = 0; i < n; i++) {
				uint64_t t = m->mappings.v[s->map_order[first + i]].m.time_ns;
				if (t >= lo && t < hi)
					out[k++] = s->map_order[first + i];
			}
			if (k)
				return k;
		}
		const gtt_process *pr = ana_process_parent(m, pid);
		uint32_t ppid = pr ? pr->ppid : 0;
		uint64_t born = pr ? pr->time_ns : 0;
		if (!ppid || ppid == pid)
			return 0;
		gen = exec_gen(s, ppid, born);
		pid = ppid;
	}
	return 0;
}

static int space_build(ana_sym *s, sym_space *sp)
{
	const ana_model *m = s->m;
	uint32_t *idx = malloc((m->mappings.n ? m->mappings.n : 1) * sizeof(*idx));
	if (!idx)
		return -1;
	size_t n = image_mappings(s, sp->pid, sp->gen, idx);
	sp->mods = calloc(n ? n : 1, sizeof(*sp->mods));
	if (!sp->mods) {
		free(idx);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const gtt_mapping *mp = &m->mappings.v[idx[i]].m;
		if (mp->prot && !(mp->prot & PROT_EXEC))
			continue;
		if (mp->end <= mp->start)
			continue;
		sym_file *f = ana_symf_get(s, mp);
		if (!f) {
			free(idx);
			return -1;
		}
		sp->mods[sp->n_mods] = (sym_mod){ mp->start, mp->end, mp->pgoff, 0, f, NULL, (uint32_t)i };
		sp->n_mods++;
	}
	free(idx);
	/* Sorted by start, then time; of overlapping mappings the earliest recorded wins (an exact
	 * repeat is the same mapping reported twice; another file over it means dlclose + dlopen,
	 * which the trace cannot date without munmap records: counted for a warning). */
	qsort(sp->mods, sp->n_mods, sizeof(*sp->mods), mod_cmp);
	size_t k = 0;
	for (size_t i = 0; i < sp->n_mods; i++) {
		sym_mod *last = k ? &sp->mods[k - 1] : NULL;
		if (last && sp->mods[i].start < last->end) {
			if (sp->mods[i].file != last->file || sp->mods[i].start != last->start)
				s->st.n_overlaps++;
			if (sp->mods[i].order < last->order)
				*last = sp->mods[i];
			continue;
		}
		sp->mods[k++] = sp->mods[i];
	}
	sp->n_mods = k;

	sp->dwfl = dwfl_begin(&s->space_cb);
	if (!sp->dwfl)
		return 0; /* symbolization without libdwfl: [module+0xOFF] frames */
	dwfl_report_begin(sp->dwfl);
	for (size_t i = 0; i < sp->n_mods; i++) {
		sym_mod *md = &sp->mods[i];
		sym_file *f = md->file;
		if (!f->resolved)
			ana_symf_resolve(s, f);
		if (f->memfd < 0 && !f->open_path)
			continue;
		if (ana_symf_bias(f, md->start, md->pgoff, &md->bias) < 0) {
			if (!f->why)
				f->why = strdup("the mapping matches none of the file's loadable segments");
			continue;
		}
		/* the same file at the same bias is one module (several mappings of one ELF) */
		for (size_t j = 0; j < i; j++)
			if (sp->mods[j].file == f && sp->mods[j].dm && sp->mods[j].bias == md->bias)
				md->dm = sp->mods[j].dm;
		if (md->dm)
			continue;
		int fd = f->memfd >= 0 ? dup(f->memfd) : -1;
		if (f->memfd >= 0 && fd < 0)
			continue;
		/* an embedded copy is reported under a name of its own: see find_debuginfo */
		char arch_name[4200];
		snprintf(arch_name, sizeof(arch_name), "%s%s", ARCHIVE_NAME_PREFIX, f->path);
		md->dm = dwfl_report_elf(sp->dwfl, f->module, f->open_path ? f->open_path : f->memfd >= 0 ? arch_name : f->path,
		                         fd, md->bias, true);
		void **userdata;
		if (md->dm && dwfl_module_info(md->dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
			*userdata = f; /* for ana_symd_find_debuginfo_cfi */
		if (!md->dm) {
			if (fd >= 0)
				close(fd);
			if (!f->why) {
				char why[512];
				snprintf(why, sizeof(why), "libdwfl: %s", dwfl_errmsg(-1));
				f->why = strdup(why);
			}
		}
	}
	if (dwfl_report_end(sp->dwfl, NULL, NULL) != 0) {
		dwfl_end(sp->dwfl);
		sp->dwfl = NULL;
		for (size_t i = 0; i < sp->n_mods; i++)
			sp->mods[i].dm = NULL;
	}
	return 0;
}

static sym_space *space_get(ana_sym *s, uint32_t pid, uint64_t t)
{
	uint32_t gen = s->n_execs ? exec_gen(s, pid, t) : 0;
	uint64_t key = (uint64_t)gen << 32 | pid;
	uint32_t *slot = ana_idtable_slot(&s->space_table, ana_hash_u64(key), space_eq, &key, s);
	if (!slot)
		return NULL;
	if (*slot)
		return s->spaces.v[*slot - 1];
	sym_space *sp = calloc(1, sizeof(*sp));
	sym_space **e = sp ? ana_vec_push(s->spaces) : NULL;
	if (!e) {
		free(sp);
		return NULL;
	}
	*e = sp;
	sp->pid = pid;
	sp->gen = gen;
	sp->sym = s;
	sp->id = (uint32_t)s->spaces.n;
	*slot = (uint32_t)s->spaces.n;
	s->space_table.n++;
	if (space_build(s, sp) < 0)
		return NULL;
	return sp;
}

uint32_t ana_sym_space_id(ana_sym *s, uint32_t pid, uint64_t time_ns)
{
	/* without execs a pid has one image: remember the last one asked for */
	if (!s->n_execs && s->last_space && pid == s->last_pid)
		return s->last_space;
	sym_space *sp = space_get(s, pid, time_ns);
	if (!sp)
		return 0;
	s->last_pid = pid;
	s->last_space = sp->id;
	return sp->id;
}

/* ---- symbolization ---- */

static int addr_eq(uint32_t id, const void *key, void *ctx)
{
	const addr_ent *a = &((ana_sym *)ctx)->addrs.v[id], *b = key;
	return a->rel == b->rel && a->file_id == b->file_id;
}

static uint32_t special_frame(ana_sym *s, uint32_t *cache, const char *name, const char *module, int kind)
{
	if (*cache == ANA_NO_ID) {
		ana_frame fr = { .name = name, .module = module, .kind = (uint8_t)kind };
		*cache = ana_frame_intern(s->m, &fr);
	}
	return *cache;
}

/* Frames of one user address, leaf first, appended at out; returns count or -1. */
static int sym_user(ana_sym *s, sym_space *sp, uint64_t pc, uint32_t *out, size_t cap)
{
	if (cap == 0)
		return 0;
	const sym_mod *md = ana_sym_mod_find(sp, pc);
	if (!md) {
		out[0] = special_frame(s, &s->unknown_frame, "[unknown]", NULL, ANA_FRAME_NATIVE);
		return out[0] == ANA_NO_ID ? -1 : 1;
	}
	sym_file *f = md->file;
	addr_ent key = { .rel = md->dm ? pc - md->bias : pc - md->start + md->pgoff, .file_id = f->id };
	uint32_t *slot = ana_idtable_slot(&s->addr_table, ana_hash_u64(key.rel * 31 + f->id), addr_eq, &key, s);
	if (!slot)
		return -1;
	if (!*slot) {
		sym_desc d[MAX_INLINE + 1];
		int n = ana_symd_describe(s, md, pc, key.rel, d, MAX_INLINE + 1);
		if (n < 0)
			return -1;
		key.off = (uint32_t)s->pool.n;
		key.n = (uint32_t)n;
		for (int i = 0; i < n; i++) {
			ana_frame fr = { .name = d[i].name, .module = f->module, .file = d[i].file, .line = d[i].line,
			                 .kind = ANA_FRAME_NATIVE, .inlined = d[i].inlined };
			uint32_t *e = ana_vec_push(s->pool);
			if (!e || (*e = ana_frame_intern(s->m, &fr)) == ANA_NO_ID)
				return -1;
		}
		addr_ent *e = ana_vec_push(s->addrs);
		if (!e)
			return -1;
		*e = key;
		*slot = (uint32_t)s->addrs.n;
		s->addr_table.n++;
		s->st.n_addr_cached++;
		if (!f->hit) {
			f->hit = 1;
			s->st.n_files++;
			switch (f->source) {
			case SRC_ARCHIVE: s->st.n_from_archive++; break;
			case SRC_SYMFS: s->st.n_from_symfs++; break;
			case SRC_DEBUGDIR: s->st.n_from_debugdir++; break;
			case SRC_PATH: s->st.n_from_path++; break;
			default: s->st.n_missing++; break;
			}
		}
		if (!md->dm)
			f->hit_missing = 1;
	}
	const addr_ent *a = &s->addrs.v[*slot - 1];
	size_t n = a->n < cap ? a->n : cap;
	memcpy(out, s->pool.v + a->off, n * sizeof(uint32_t));
	return (int)n;
}

static uint32_t sym_kernel(ana_sym *s, uint64_t pc)
{
	const char *name, *module;
	if (!s->ksym_tried) {
		/* read /proc/kallsyms (tens of thousands of lines) only for a trace with kernel frames */
		s->ksym_tried = 1;
		s->ksym = ana_ksym_load(ana_meta_get(s->m, "boot_id"));
	}
	if (s->ksym && ana_ksym_lookup(s->ksym, pc, &name, &module) == 0) {
		ana_frame fr = { .name = name, .module = module, .kind = ANA_FRAME_KERNEL };
		return ana_frame_intern(s->m, &fr);
	}
	return special_frame(s, &s->kernel_frame, "[kernel]", "[kernel.kallsyms]", ANA_FRAME_KERNEL);
}

/* Where stacks begin. Process and thread entries written in assembly: the bottom of every
 * stack, whatever their CFI says (ld.so's _dl_start_user has none). */
static int is_os_entry(const char *n)
{
	static const char *const names[] = {
		"_start", "_dl_start_user", "clone", "clone3", "__clone", "__clone3", "__GI___clone", "__GI___clone3",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	return 0;
}

/* C library entries that run once at the bottom of a thread: where frame-pointer chains end
 * (glibc is built without frame pointers), and whose callers are the same in every stack. */
static int is_libc_entry(const char *n)
{
	static const char *const names[] = {
		"start_thread", "__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
		"__libc_start_main_alias_2",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	return 0;
}

/* The function (not an inlined call) at a user address, as a frame id (the frame of the line
 * executed there: functions compare by name and module); ANA_NO_ID on ENOMEM. */
static uint32_t func_frame(ana_sym *s, sym_space *sp, uint64_t pc)
{
	uint32_t ids[MAX_INLINE + 1];
	int k = sym_user(s, sp, pc, ids, MAX_INLINE + 1);
	return k > 0 ? ids[k - 1] : ANA_NO_ID;
}

/* How many of the outermost frames of a complete stack are looked at for thread entries. */
#define ROOT_SCAN_FRAMES 4

/* The sample's user frames into u as the unwinder finds them (its registers and stack copy,
 * continued with its frame-pointer callchain where they agree; else the callchain), before
 * what their functions decide: 1 when they are the callchain itself, else 0. */
static int raw_frames(ana_sym *s, sym_space *sp, const gtt_sample *smp, uw_state *u)
{
	u->n = u->n_dwarf = 0;
	u->stitched = 0;
	u->stop = ANA_UNWIND_NO_USER;
	uint64_t ip;
	if ((smp->flags & GTT_SAMPLE_REGS) && (smp->flags & GTT_SAMPLE_STACK))
		ana_uw_dwarf(s, sp, smp, u);
	if (u->n == 0 && smp->n_user == 0 && ana_uw_sample_ip(smp, &ip) == 0) {
		/* nothing to unwind with: at least the sampled instruction */
		u->raw[0] = ip;
		u->exact[0] = 1;
		u->n = 1;
		u->stop = ANA_UNWIND_IP_ONLY;
	}
	if (u->n >= 1 && u->n_dwarf == u->n && ANA_UNWIND_TRUNCATED(u->stop) && smp->n_user >= 2)
		ana_uw_stitch(sp, smp, u);
	if (u->n <= 1 && !u->stitched && smp->n_user > u->n) {
		/* the recorded callchain: its first entry is exact, the others return addresses */
		u->n = smp->n_user < MAX_UNWIND ? smp->n_user : MAX_UNWIND;
		for (size_t i = 0; i < u->n; i++) {
			u->raw[i] = smp->ips[smp->n_kernel + i];
			u->exact[i] = i == 0;
		}
		return 1;
	}
	return 0;
}

/* The user frames in s->uw (raw_frames; fp_chain its result) completed where their functions
 * say how the stack ends. */
static int user_finish(ana_sym *s, sym_space *sp, int fp_chain, ana_unwind_info *ui)
{
	uw_state *u = &s->uw;
	if (u->n == 0)
		return 0;
	/* the function the stack ends in decides what the unwinder could not */
	uint32_t outer_id = func_frame(s, sp, uw_pc(u, u->n - 1));
	if (outer_id == ANA_NO_ID)
		return GTT_ENOMEM;
	const char *outer = s->m->frames.v[outer_id].name;
	if (fp_chain) {
		/* no CFI was asked: a chain is complete when it ends in an entry function */
		u->stop = is_os_entry(outer) || is_libc_entry(outer) ? ANA_UNWIND_ROOT : ANA_UNWIND_FP_END;
	} else if (u->stitched) {
		if (is_libc_entry(outer)) {
			/* the FP chain stops in the C library's thread entry: its callers, from this
			 * image's complete stacks, finish it; until one is seen, try again later */
			if (!ana_uw_root_complete(sp, u, &s->m->frames.v[outer_id]))
				ui->pending = 1;
			u->stop = ANA_UNWIND_STITCHED;
		} else if (is_os_entry(outer)) {
			u->stop = ANA_UNWIND_STITCHED;
		}
	} else if (ANA_UNWIND_TRUNCATED(u->stop) && u->stop != ANA_UNWIND_IP_ONLY && is_os_entry(outer)) {
		u->stop = ANA_UNWIND_ROOT;
	}
	if (u->stop == ANA_UNWIND_ROOT && !fp_chain && u->n >= 2) {
		/* learn the callers of this image's thread entries, for stitched stacks: they sit
		 * within the outermost few frames (clone3 > start_thread; _start >
		 * __libc_start_main > __libc_start_call_main) */
		size_t lo = u->n > ROOT_SCAN_FRAMES ? u->n - ROOT_SCAN_FRAMES : 0;
		for (size_t k = u->n - 1; k-- > lo;) {
			uint32_t id = func_frame(s, sp, uw_pc(u, k));
			if (id == ANA_NO_ID)
				return GTT_ENOMEM;
			if (is_libc_entry(s->m->frames.v[id].name) && ana_uw_root_learn(sp, u, k, &s->m->frames.v[id]) < 0)
				return GTT_ENOMEM;
		}
	}
	return 0;
}

/* The stack of a sample whose user frames raw_frames put in s->uw (fp_chain its result),
 * n_kernel kernel frames kips before them: frame ids root first into frames[0..cap). */
static int sample_finish(ana_sym *s, sym_space *sp, int fp_chain, uint32_t n_kernel, const uint64_t *kips,
                         uint32_t *frames, uint32_t cap, ana_unwind_info *ui)
{
	if (user_finish(s, sp, fp_chain, ui) < 0)
		return GTT_ENOMEM;
	const uw_state *u = &s->uw;
	ui->unwind = (uint8_t)u->stop;
	/* leaf first: kernel frames, then user frames */
	size_t n = 0, lcap = sizeof(s->leaf_first) / sizeof(s->leaf_first[0]);
	if (s->o.kernel) {
		for (uint32_t i = 0; i < n_kernel && n < lcap; i++) {
			uint32_t id = sym_kernel(s, i == 0 ? kips[i] : kips[i] - 1);
			if (id == ANA_NO_ID)
				return GTT_ENOMEM;
			/* unsymbolized kernel frames collapse into one */
			if (n && id == s->kernel_frame && s->leaf_first[n - 1] == id)
				continue;
			s->leaf_first[n++] = id;
		}
	}
	for (size_t i = 0; i < u->n && n < lcap; i++) {
		int k = sym_user(s, sp, uw_pc(u, i), s->leaf_first + n, lcap - n);
		if (k < 0)
			return GTT_ENOMEM;
		n += (size_t)k;
	}
	if (n > cap)
		n = cap; /* keep the leaf side of an absurdly deep stack */
	for (size_t i = 0; i < n; i++)
		frames[i] = s->leaf_first[n - 1 - i];
	return (int)n;
}

int ana_sym_sample(ana_sym *s, const gtt_sample *smp, uint32_t *frames, uint32_t cap, ana_unwind_info *ui)
{
	ui->unwind = ANA_UNWIND_NO_USER;
	ui->pending = 0;
	sym_space *sp = space_get(s, smp->pid, smp->time_ns);
	if (!sp)
		return GTT_ENOMEM;
	int fp_chain = raw_frames(s, sp, smp, &s->uw);
	return sample_finish(s, sp, fp_chain, smp->n_kernel, smp->ips, frames, cap, ui);
}

/* ---- unwinding ahead: the addresses to symbolize, the unwinds kept ---- */

/* An unwind kept by ana_sym_collect, as words of s->uwc: [0] space id | stop << 32 |
 * fp_chain << 40 | stitched << 41 | counted as a DWARF unwind << 42 | as a failed one << 43,
 * [1] n_kernel | n << 32, then the n_kernel kernel addresses, the n user frames (raw) and
 * their exact flags, 64 to a word. */
#define UWC_HEAD 2

static size_t uwc_words(uint32_t n_kernel, size_t n)
{
	return UWC_HEAD + n_kernel + n + (n + 63) / 64;
}

static int uwc_eq(uint32_t id, const void *key, void *ctx)
{
	const ana_sym *s = ctx;
	const uint64_t *a = s->uwc.v + s->uw_ents.v[id], *b = key;
	return a[0] == b[0] && a[1] == b[1] &&
	       memcmp(a + UWC_HEAD, b + UWC_HEAD,
	              (uwc_words((uint32_t)b[1], (size_t)(b[1] >> 32)) - UWC_HEAD) * sizeof(uint64_t)) == 0;
}

/* Keep the unwind in s->uw of a sample in space sp: its id (> 0) in *id, 0 when the cache is
 * full. 0 or GTT_ENOMEM. */
static int uwc_keep(ana_sym *s, const sym_space *sp, const gtt_sample *smp, int fp_chain, int d_dwarf,
                    int d_err, uint32_t *id)
{
	const uw_state *u = &s->uw;
	uint32_t n_kernel = s->o.kernel ? smp->n_kernel : 0; /* kernel frames are dropped otherwise */
	size_t len = uwc_words(n_kernel, u->n), off = s->uwc.n;
	*id = 0;
	if (off + len > UWC_MAX_WORDS)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!ana_vec_push(s->uwc))
			return GTT_ENOMEM;
	uint64_t *w = s->uwc.v + off;
	memset(w, 0, len * sizeof(*w));
	w[0] = sp->id | (uint64_t)(uint8_t)u->stop << 32 | (uint64_t)!!fp_chain << 40 | (uint64_t)!!u->stitched << 41 |
	       (uint64_t)!!d_dwarf << 42 | (uint64_t)!!d_err << 43;
	w[1] = n_kernel | (uint64_t)u->n << 32;
	if (n_kernel)
		memcpy(w + UWC_HEAD, smp->ips, n_kernel * sizeof(uint64_t));
	memcpy(w + UWC_HEAD + n_kernel, u->raw, u->n * sizeof(uint64_t));
	for (size_t i = 0; i < u->n; i++)
		if (u->exact[i])
			w[UWC_HEAD + n_kernel + u->n + i / 64] |= 1ull << (i % 64);
	uint32_t *slot = ana_idtable_slot(&s->uwc_table, ana_hash_bytes(w, len * sizeof(*w), 3), uwc_eq, w, s);
	if (!slot)
		return GTT_ENOMEM;
	if (*slot) {
		s->uwc.n = off; /* seen before */
		*id = *slot;
		return 0;
	}
	size_t *e = ana_vec_push(s->uw_ents);
	if (!e)
		return GTT_ENOMEM;
	*e = off;
	*slot = (uint32_t)s->uw_ents.n;
	s->uwc_table.n++;
	*id = *slot;
	return 0;
}

int ana_sym_collect(ana_sym *s, const gtt_sample *smp, uint32_t *unwind_id)
{
	if (unwind_id)
		*unwind_id = 0;
	sym_space *sp = space_get(s, smp->pid, smp->time_ns);
	if (!sp)
		return GTT_ENOMEM;
	/* counted when the unwind is used (ana_sym_sample_unwound, or ana_sym_sample unwinding
	 * again): as often as ana_sym_sample alone would count it */
	uint64_t n_dwarf = s->st.n_dwarf, n_dwarf_errors = s->st.n_dwarf_errors;
	uw_state *u = &s->uw;
	int fp_chain = raw_frames(s, sp, smp, u);
	int d_dwarf = s->st.n_dwarf != n_dwarf, d_err = s->st.n_dwarf_errors != n_dwarf_errors;
	s->st.n_dwarf = n_dwarf;
	s->st.n_dwarf_errors = n_dwarf_errors;
	/* every address ana_sym_sample looks up is among these: the frames it adds to a stitched
	 * stack (a thread entry's callers) are those of another sample's complete stack */
	for (size_t i = 0; i < u->n; i++) {
		uint64_t pc = uw_pc(u, i);
		const sym_mod *md = ana_sym_mod_find(sp, pc);
		if (!md || !md->dm)
			continue;
		addr_ent key = { .rel = pc - md->bias, .file_id = md->file->id };
		uint32_t *slot = ana_idtable_slot(&s->addr_table, ana_hash_u64(key.rel * 31 + key.file_id), addr_eq, &key, s);
		if (!slot)
			return GTT_ENOMEM;
		if (!*slot && ana_symd_note(s, sp, pc) < 0)
			return GTT_ENOMEM;
	}
	return unwind_id ? uwc_keep(s, sp, smp, fp_chain, d_dwarf, d_err, unwind_id) : 0;
}

int ana_sym_sample_unwound(ana_sym *s, uint32_t unwind_id, uint32_t *frames, uint32_t cap, ana_unwind_info *ui)
{
	ui->unwind = ANA_UNWIND_NO_USER;
	ui->pending = 0;
	if (unwind_id == 0 || unwind_id > s->uw_ents.n)
		return GTT_EINVAL;
	const uint64_t *w = s->uwc.v + s->uw_ents.v[unwind_id - 1];
	sym_space *sp = s->spaces.v[(uint32_t)w[0] - 1];
	uint32_t n_kernel = (uint32_t)w[1];
	uw_state *u = &s->uw;
	u->n = (size_t)(w[1] >> 32);
	u->stop = (uint8_t)(w[0] >> 32);
	u->stitched = (int)(w[0] >> 41 & 1);
	memcpy(u->raw, w + UWC_HEAD + n_kernel, u->n * sizeof(uint64_t));
	for (size_t i = 0; i < u->n; i++)
		u->exact[i] = (uint8_t)(w[UWC_HEAD + n_kernel + u->n + i / 64] >> (i % 64) & 1);
	s->st.n_dwarf += w[0] >> 42 & 1;
	s->st.n_dwarf_errors += w[0] >> 43 & 1;
	return sample_finish(s, sp, (int)(w[0] >> 40 & 1), n_kernel, w + UWC_HEAD, frames, cap, ui);
}

/* ---- lifecycle ---- */

static int map_cmp(const void *a, const void *b, void *ctx)
{
	const ana_model *m = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const gtt_mapping *x = &m->mappings.v[i].m, *y = &m->mappings.v[j].m;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int exec_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

ana_sym *ana_sym_create(ana_model *m, const ana_sym_opts *o)
{
	ana_sym *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->m = m;
	s->o = *o;
	s->kernel_frame = s->unknown_frame = ANA_NO_ID;
	elf_version(EV_CURRENT);
	/* separate debug files: next to the binary, .debug/, /usr/lib/debug (+ under --symfs) */
	size_t plen = 64 + (o->symfs ? 2 * strlen(o->symfs) : 0);
	s->debuginfo_path = malloc(plen);
	s->map_order = malloc((m->mappings.n ? m->mappings.n : 1) * sizeof(uint32_t));
	if (!s->debuginfo_path || !s->map_order) {
		ana_sym_destroy(s);
		return NULL;
	}
	if (o->symfs)
		snprintf(s->debuginfo_path, plen, ":.debug:/usr/lib/debug:%s/usr/lib/debug", o->symfs);
	else
		snprintf(s->debuginfo_path, plen, ":.debug:/usr/lib/debug");
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = ana_symd_find_debuginfo;
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	s->space_cb = s->cb;
	s->space_cb.find_debuginfo = ana_symd_find_debuginfo_cfi;
	for (size_t i = 0; i < m->mappings.n; i++)
		s->map_order[i] = (uint32_t)i;
	qsort_r(s->map_order, m->mappings.n, sizeof(uint32_t), map_cmp, m);
	for (size_t i = 0; i < m->processes.n; i++)
		s->n_execs += m->processes.v[i].event == GTT_PROC_EXEC;
	if (s->n_execs) {
		s->execs = malloc(2 * s->n_execs * sizeof(uint64_t));
		if (!s->execs) {
			ana_sym_destroy(s);
			return NULL;
		}
		size_t k = 0;
		for (size_t i = 0; i < m->processes.n; i++)
			if (m->processes.v[i].event == GTT_PROC_EXEC) {
				s->execs[2 * k] = m->processes.v[i].pid;
				s->execs[2 * k + 1] = m->processes.v[i].time_ns;
				k++;
			}
		qsort(s->execs, s->n_execs, 2 * sizeof(uint64_t), exec_cmp);
	}
	return s;
}

void ana_sym_get_stats(const ana_sym *s, ana_sym_stats *st)
{
	*st = s->st;
}

void ana_sym_destroy(ana_sym *s)
{
	if (!s)
		return;
	ana_symd_free(s);
	for (size_t i = 0; i < s->spaces.n; i++) {
		sym_space *sp = s->spaces.v[i];
		if (sp->dwfl)
			dwfl_end(sp->dwfl);
		free(sp->mods);
		free(sp->roots.v);
		free(sp->cfi);
		free(sp);
	}
	free(s->spaces.v);
	for (size_t i = 0; i < s->files.n; i++) {
		sym_file *f = s->files.v[i];
		if (f->memfd >= 0)
			close(f->memfd);
		free(f->open_path);
		free(f->why);
		free(f->fde_starts);
		free(f);
	}
	free(s->files.v);
	for (size_t i = 0; i < s->archives.n; i++) {
		free(s->archives.v[i].path);
		free(s->archives.v[i].data);
	}
	free(s->archives.v);
	for (size_t i = 0; i < s->missing.n; i++)
		free(s->missing.v[i]);
	free(s->missing.v);
	ana_idtable_free(&s->file_table);
	ana_idtable_free(&s->space_table);
	ana_idtable_free(&s->addr_table);
	ana_idtable_free(&s->uwc_table);
	free(s->uwc.v);
	free(s->uw_ents.v);
	free(s->addrs.v);
	free(s->pool.v);
	free(s->map_order);
	free(s->execs);
	free(s->debuginfo_path);
	ana_ksym_free(s->ksym);
	free(s);
}

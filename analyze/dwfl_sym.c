/* dwfl_sym.c — symbolization of user addresses for analyze/dwfl.c: names, inlined calls and
 * source lines from a binary's symbols and DWARF, read in a Dwfl of the binary's own.
 *
 * DWARF is what costs memory: libdw inflates a debug file's compressed sections (libc's 4 MiB
 * debug file holds 9.5 MiB of them) into the heap when it opens them, and keeps them until its
 * Dwfl ends. So the address spaces' Dwfls only unwind (a separate debug file is given to them
 * only for its .debug_frame), and each binary's DWARF is opened in a Dwfl of its own: the
 * addresses that pass 2 will ask for are noted ahead (ana_sym_collect), then symbolized one
 * binary at a time (ana_sym_prepare), each binary's Dwfl closed before the next opens. The
 * peak is then the largest single binary's DWARF, not the sum over the binaries the samples
 * reach, once per process image. An address not noted ahead is symbolized when asked, in its
 * binary's Dwfl, which then stays open until the next ana_sym_prepare. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "demangle.h"
#include "dwfl_priv.h"

/* ---- a binary's own Dwfl ---- */

static void file_close(sym_file *f)
{
	if (f->sym_dwfl)
		dwfl_end(f->sym_dwfl);
	f->sym_dwfl = NULL;
	f->sym_dm = NULL;
}

/* The module of f in its own Dwfl (opened now if needed), at bias 0: module addresses are
 * link-time addresses. NULL when the file cannot be reported. */
static Dwfl_Module *file_open(ana_sym *s, sym_file *f)
{
	if (f->sym_dwfl || f->sym_failed)
		return f->sym_dm;
	if (!f->resolved)
		ana_symf_resolve(s, f);
	if (f->memfd < 0 && !f->open_path)
		goto fail;
	f->sym_dwfl = dwfl_begin(&s->cb);
	if (!f->sym_dwfl)
		goto fail;
	int fd = f->memfd >= 0 ? dup(f->memfd) : -1;
	if (f->memfd >= 0 && fd < 0)
		goto fail;
	/* an embedded copy is reported under a name of its own: see ana_symd_find_debuginfo */
	char arch_name[4200];
	snprintf(arch_name, sizeof(arch_name), "%s%s", ARCHIVE_NAME_PREFIX, f->path);
	dwfl_report_begin(f->sym_dwfl);
	f->sym_dm = dwfl_report_elf(f->sym_dwfl, f->module, f->open_path ? f->open_path : arch_name, fd, 0, true);
	if (!f->sym_dm && fd >= 0)
		close(fd);
	if (dwfl_report_end(f->sym_dwfl, NULL, NULL) != 0 || !f->sym_dm)
		goto fail;
	return f->sym_dm;
fail:
	file_close(f);
	f->sym_failed = 1;
	return NULL;
}

/* ---- frames of one address ---- */

/* "[module+0xOFF]" for an address without a symbol; pseudo-files keep one pair of brackets. */
static void unknown_name(char *buf, size_t cap, const char *module, uint64_t off)
{
	size_t len = strlen(module);
	if (len >= 2 && module[0] == '[' && module[len - 1] == ']')
		snprintf(buf, cap, "[%.*s+0x%" PRIx64 "]", (int)(len - 2), module + 1, off);
	else
		snprintf(buf, cap, "[%s+0x%" PRIx64 "]", module, off);
}

/* A symbol name as shown: versioned ELF names ("memcpy@@GLIBC_2.14") lose the version,
 * C++ names are demangled. *owned is set when the result was allocated. */
static const char *display_name(const char *sym, char **owned)
{
	*owned = NULL;
	if (!sym)
		return NULL;
	const char *at = strchr(sym, '@');
	if (at && at != sym) {
		*owned = strndup(sym, (size_t)(at - sym));
		if (!*owned)
			return sym;
		char *dem = ana_demangle(*owned);
		if (dem) {
			free(*owned);
			*owned = dem;
		}
		return *owned;
	}
	*owned = ana_demangle(sym);
	return *owned ? *owned : sym;
}

static const char *die_name(Dwarf_Die *die, char **dem)
{
	Dwarf_Attribute attr;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (n) {
		*dem = ana_demangle(n);
		return *dem ? *dem : n;
	}
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		n = dwarf_formstring(&attr);
	return n;
}

/* The line a scope of an inlined call was called from (DW_AT_call_line), 0 when not given. */
static int call_line(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	Dwarf_Word v = 0;
	if (!dwarf_attr_integrate(die, DW_AT_call_line, &at) || dwarf_formudata(&at, &v) != 0 || v > INT32_MAX)
		return 0;
	return (int)v;
}

/* d's strings interned into the model (they point into libdw's data or a freed buffer
 * otherwise); 0 or -1 on ENOMEM. */
static int desc_keep(ana_sym *s, sym_desc *d, const char *name, const char *file)
{
	d->name = ana_intern_str(s->m, name);
	d->file = file ? ana_intern_str(s->m, file) : NULL;
	return d->name && (!file || d->file) ? 0 : -1;
}

/* Frames for address pc of module dm (link-time address rel in file f), inlined calls first,
 * then the function, leaf first. Each frame's line is the one it executes: the address's own
 * line for the innermost, for the others the line of the inlined call they make (the
 * function's declaration line is not what a profile's reader wants: pprof shows it per
 * location). Returns the count or -1 on ENOMEM. */
static int describe_addr(ana_sym *s, sym_file *f, Dwfl_Module *dm, uint64_t pc, uint64_t rel, sym_desc *out,
                         int cap)
{
	int n = 0, rc = -1;
	char unknown[600], *dem = NULL, *dem2 = NULL;
	const char *name = NULL, *file = NULL;
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *sname = dwfl_module_addrinfo(dm, pc, &off, &sym, NULL, NULL, NULL);
	Dwarf_Addr dbias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(dm, pc, &dbias);
	Dwarf_Die *scopes = NULL;
	int nscopes = cu ? dwarf_getscopes(cu, pc - dbias, &scopes) : 0;
	int sub = -1, pc_line = 0;
	Dwfl_Line *dl = dwfl_module_getsrc(dm, pc);
	const char *pc_file = dl ? dwfl_lineinfo(dl, NULL, &pc_line, NULL, NULL, NULL) : NULL;
	if (!pc_file || pc_line < 0)
		pc_line = 0;
	int line = pc_line; /* what the scope being made executes */
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram) {
			sub = i;
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		int called_from = call_line(&scopes[i]);
		if (n >= cap - 1 || n >= MAX_INLINE) {
			line = called_from;
			continue;
		}
		char *idem = NULL;
		const char *iname = die_name(&scopes[i], &idem);
		/* the line's own file for the innermost */
		const char *ifile = n == 0 && pc_file ? pc_file : dwarf_decl_file(&scopes[i]);
		int k = desc_keep(s, &out[n], iname ? iname : "[inlined]", ifile);
		free(idem);
		if (k < 0)
			goto out;
		out[n].line = line;
		out[n].inlined = 1;
		n++;
		line = called_from; /* the caller executes the call */
	}
	if (sname)
		name = display_name(sname, &dem);
	else if (sub >= 0)
		name = die_name(&scopes[sub], &dem2);
	if (sub >= 0)
		file = dwarf_decl_file(&scopes[sub]);
	if (n == 0 && pc_file)
		file = pc_file;
	out[n].line = line;
	out[n].inlined = 0;
	if (!name) {
		/* no symbol: name the function by its start from the unwind tables, so that samples
		 * anywhere in one function of a stripped library (libcuda) add up */
		unknown_name(unknown, sizeof(unknown), f->module, ana_symf_fde_start(f, dm, rel));
		name = unknown;
		out[n].line = 0; /* one frame per function: a line would split it again */
	}
	if (desc_keep(s, &out[n], name, file) < 0)
		goto out;
	rc = n + 1;
out:
	free(dem);
	free(dem2);
	free(scopes);
	return rc;
}

/* ---- addresses noted ahead ---- */

static uint64_t pre_hash(uint64_t rel, uint32_t file_id)
{
	return ana_hash_u64(rel * 31 + file_id);
}

static int pre_eq(uint32_t id, const void *key, void *ctx)
{
	const pre_ent *a = &((ana_sym *)ctx)->pres.v[id], *b = key;
	return a->rel == b->rel && a->file_id == b->file_id;
}

int ana_symd_note(ana_sym *s, const sym_space *sp, uint64_t pc)
{
	const sym_mod *md = ana_sym_mod_find(sp, pc);
	if (!md || !md->dm)
		return 0; /* named [module+0xOFF] without the file's help */
	pre_ent key = { .rel = pc - md->bias, .file_id = md->file->id };
	uint32_t *slot = ana_idtable_slot(&s->pre_table, pre_hash(key.rel, key.file_id), pre_eq, &key, s);
	if (!slot)
		return GTT_ENOMEM;
	if (*slot)
		return 0;
	pre_ent *e = ana_vec_push(s->pres);
	if (!e)
		return GTT_ENOMEM;
	*e = key;
	*slot = (uint32_t)s->pres.n;
	s->pre_table.n++;
	s->n_pre_pending++;
	return 0;
}

static int pre_cmp(const void *a, const void *b, void *ctx)
{
	const pre_ent *x = &((ana_sym *)ctx)->pres.v[*(const uint32_t *)a];
	const pre_ent *y = &((ana_sym *)ctx)->pres.v[*(const uint32_t *)b];
	if (x->file_id != y->file_id)
		return x->file_id < y->file_id ? -1 : 1;
	return x->rel < y->rel ? -1 : x->rel > y->rel;
}

/* Symbolize the noted addresses of one file (pres idx[0..n)) in its own Dwfl, then close it.
 * 0 or GTT_ENOMEM. */
static int prepare_file(ana_sym *s, sym_file *f, const uint32_t *idx, size_t n)
{
	int rc = 0;
	Dwfl_Module *dm = file_open(s, f);
	if (!dm)
		return 0; /* left to ana_symd_describe, which has the space's module */
	for (size_t i = 0; i < n; i++) {
		sym_desc tmp[MAX_INLINE + 1];
		pre_ent *e = &s->pres.v[idx[i]];
		int k = describe_addr(s, f, dm, e->rel, e->rel, tmp, MAX_INLINE + 1);
		if (k < 0 || s->descs.n + (size_t)k > UINT32_MAX) {
			rc = GTT_ENOMEM;
			break;
		}
		e = &s->pres.v[idx[i]];
		e->off = (uint32_t)s->descs.n;
		e->n = (uint32_t)k;
		for (int j = 0; j < k; j++) {
			sym_desc *d = ana_vec_push(s->descs);
			if (!d) {
				rc = GTT_ENOMEM;
				goto out;
			}
			*d = tmp[j];
		}
		e->done = 1;
	}
out:
	file_close(f);
	return rc;
}

int ana_sym_prepare(ana_sym *s)
{
	int rc = 0;
	uint32_t *idx = NULL;
	/* files opened for addresses not noted ahead: closed first, the peak is one file */
	for (size_t i = 0; i < s->files.n; i++)
		file_close(s->files.v[i]);
	if (!s->n_pre_pending)
		return 0;
	idx = malloc(s->n_pre_pending * sizeof(*idx));
	if (!idx)
		return GTT_ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < s->pres.n && n < s->n_pre_pending; i++)
		if (!s->pres.v[i].done)
			idx[n++] = (uint32_t)i;
	qsort_r(idx, n, sizeof(*idx), pre_cmp, s);
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i;
		uint32_t file_id = s->pres.v[idx[i]].file_id;
		while (j < n && s->pres.v[idx[j]].file_id == file_id)
			j++;
		rc = prepare_file(s, s->files.v[file_id], idx + i, j - i);
		i = j;
	}
	s->n_pre_pending = 0;
	free(idx);
	return rc;
}

int ana_symd_describe(ana_sym *s, const sym_mod *md, uint64_t pc, uint64_t rel, sym_desc *out, int cap)
{
	sym_file *f = md->file;
	if (!md->dm) {
		char unknown[600];
		unknown_name(unknown, sizeof(unknown), f->module, rel);
		out[0] = (sym_desc){ .name = ana_intern_str(s->m, unknown) };
		return out[0].name ? 1 : -1;
	}
	pre_ent key = { .rel = rel, .file_id = f->id };
	uint32_t *slot = ana_idtable_slot(&s->pre_table, pre_hash(rel, f->id), pre_eq, &key, s);
	if (!slot)
		return -1;
	const pre_ent *e = *slot ? &s->pres.v[*slot - 1] : NULL;
	if (e && e->done) {
		int n = (int)e->n < cap ? (int)e->n : cap;
		memcpy(out, s->descs.v + e->off, (size_t)n * sizeof(*out));
		return n;
	}
	/* not noted ahead: the file's own Dwfl, open until the next ana_sym_prepare; the space's
	 * module only when the file cannot be reported on its own */
	s->st.n_addr_late++;
	Dwfl_Module *dm = file_open(s, f);
	return dm ? describe_addr(s, f, dm, rel, rel, out, cap) : describe_addr(s, f, md->dm, pc, rel, out, cap);
}

void ana_symd_free(ana_sym *s)
{
	for (size_t i = 0; i < s->files.n; i++)
		file_close(s->files.v[i]);
	free(s->pres.v);
	free(s->descs.v);
	ana_idtable_free(&s->pre_table);
}

/* ---- where the Dwfls find separate debug files ---- */

int ana_symd_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                            const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                            char **debuginfo_file_name)
{
	/* DWARF for an embedded copy only from a debug file found by build-id (/usr/lib/debug,
	 * --symfs), never from the original file beside it, so that analysis gives the same
	 * stacks whether or not the binary is still there */
	if (file_name && strncmp(file_name, ARCHIVE_NAME_PREFIX, strlen(ARCHIVE_NAME_PREFIX)) == 0)
		return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
		                                    debuglink_crc, debuginfo_file_name);
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
	                                    debuginfo_file_name);
}

/* 1 when the ELF file at path has the build-id bid and a .debug_frame section, 0 when it has
 * the build-id but no .debug_frame, -1 when it cannot be read or is another file. */
static int path_debug_frame(const char *path, const uint8_t *bid, uint32_t bid_len)
{
	int rc = -1;
	size_t shstrndx;
	const void *id = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	Elf *elf = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (!elf || elf_kind(elf) != ELF_K_ELF || dwelf_elf_gnu_build_id(elf, &id) != (ssize_t)bid_len ||
	    memcmp(id, bid, bid_len) != 0 || elf_getshdrstrndx(elf, &shstrndx) != 0)
		goto out;
	rc = 0;
	Elf_Scn *scn = NULL;
	while (rc == 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		rc = name && (strcmp(name, ".debug_frame") == 0 || strcmp(name, ".zdebug_frame") == 0);
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Whether f's separate debug file, looked for by build-id where libdwfl looks (the absolute
 * directories of the debuginfo path: /usr/lib/debug, then under --symfs), has .debug_frame:
 * 1 yes, 0 no, -1 no such file. */
static int build_id_debug_frame(const ana_sym *s, const sym_file *f)
{
	char hex[2 * GTT_BUILD_ID_MAX + 1], p[4200];
	int rc = -1;
	if (f->build_id_len < 2)
		return -1;
	ana_symf_bid_hex(f->build_id, f->build_id_len, hex);
	for (int i = 0; i < 2 && rc < 0; i++) {
		if (i == 1 && !s->o.symfs)
			break;
		snprintf(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", i ? s->o.symfs : "", hex, hex + 2);
		rc = path_debug_frame(p, f->build_id, f->build_id_len);
	}
	return rc;
}

int ana_symd_find_debuginfo_cfi(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name)
{
	/* libdwfl's unwinder asks for the debug file's DWARF when the .eh_frame CFI does not take
	 * it further (every stack that ends early): without .debug_frame in it, all it would get
	 * is the whole DWARF inflated, once per process image. Decided before libdwfl's finders
	 * run: they hand the file they find to the module themselves, whatever this returns. */
	sym_file *f = userdata ? *userdata : NULL;
	if (f) {
		if (!f->debug_frame)
			f->debug_frame = build_id_debug_frame(f->sym, f) == 0 ? -1 : 1;
		if (f->debug_frame < 0)
			return -1;
	}
	return ana_symd_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
	                               debuginfo_file_name);
}

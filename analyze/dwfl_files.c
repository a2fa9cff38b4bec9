/* dwfl_files.c — finding the binary behind each mapping for analyze/dwfl.c: the embedded
 * archive, --symfs, the original path, /usr/lib/debug/.build-id (build-ids always checked); its
 * load bias, bytes at an address, and function starts from .eh_frame_hdr. */
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dwfl_priv.h"

/* ---- files: finding the binary behind a mapping ---- */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b && b[1] ? b + 1 : path;
}

static int file_eq(uint32_t id, const void *key, void *ctx)
{
	const sym_file *a = ((ana_sym *)ctx)->files.v[id];
	const gtt_mapping *b = key;
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len && memcmp(a->build_id, b->build_id, b->build_id_len) == 0;
	return strcmp(a->path, b->path) == 0;
}

void ana_symf_bid_hex(const uint8_t *bid, uint32_t len, char *out)
{
	for (uint32_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bid[i]);
	out[2 * len] = 0;
}

/* Read program headers of an ELF and check its build-id against f's. 0, or -1 with f->why. */
static int file_check_elf(ana_sym *s, sym_file *f, int fd, const char *where)
{
	int rc = -1;
	char why[512];
	why[0] = 0;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		snprintf(why, sizeof(why), "%s is not an ELF file", where);
		goto out;
	}
	const void *bid = NULL;
	ssize_t bid_len = dwelf_elf_gnu_build_id(elf, &bid);
	if (f->build_id_len && (bid_len != (ssize_t)f->build_id_len || memcmp(bid, f->build_id, f->build_id_len))) {
		snprintf(why, sizeof(why), "%s has a different build-id", where);
		s->st.n_mismatch++;
		goto out;
	}
	size_t phnum = 0;
	if (elf_getphdrnum(elf, &phnum) != 0)
		phnum = 0;
	f->n_segs = 0;
	for (size_t i = 0; i < phnum && f->n_segs < MAX_SEGS; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->n_segs++] = (load_seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_memsz, ph.p_flags };
	}
	if (f->n_segs == 0) {
		snprintf(why, sizeof(why), "%s has no loadable segments", where);
		goto out;
	}
	f->et_exec = eh.e_type == ET_EXEC;
	rc = 0;
out:
	if (elf)
		elf_end(elf);
	if (rc < 0 && why[0]) {
		free(f->why);
		f->why = strdup(why);
	}
	return rc;
}

static int file_try_path(ana_sym *s, sym_file *f, const char *path)
{
	/* paths come from the trace: a FIFO or a device there must not block or feed us forever */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	int rc = file_check_elf(s, f, fd, path);
	close(fd);
	if (rc == 0) {
		f->open_path = strdup(path);
		if (!f->open_path)
			return -1;
	}
	return rc;
}

static sym_archive *archive_find(ana_sym *s, const sym_file *f)
{
	for (size_t i = 0; i < s->archives.n; i++) {
		sym_archive *a = &s->archives.v[i];
		if (f->build_id_len) {
			if (a->build_id_len == f->build_id_len && memcmp(a->build_id, f->build_id, f->build_id_len) == 0)
				return a;
		} else if (a->build_id_len == 0 && a->path && strcmp(a->path, f->path) == 0) {
			return a;
		}
	}
	return NULL;
}

static int file_try_archive(ana_sym *s, sym_file *f, sym_archive *a)
{
	/* A memfd lets every space's Dwfl map the image through its own fd (dwfl_report_elf
	 * consumes one) while the bytes exist once. */
	int fd = memfd_create("gt-archive", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < a->len) {
		ssize_t w = write(fd, a->data + done, a->len - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	char where[600];
	snprintf(where, sizeof(where), "embedded copy of %s", f->path);
	if (file_check_elf(s, f, fd, where) < 0) {
		close(fd);
		return -1;
	}
	f->memfd = fd;
	return 0;
}

void ana_symf_resolve(ana_sym *s, sym_file *f)
{
	char p[4096], hex[2 * GTT_BUILD_ID_MAX + 1];
	f->resolved = 1;
	if (!s->o.no_archive) {
		sym_archive *a = archive_find(s, f);
		if (a && file_try_archive(s, f, a) == 0) {
			f->source = SRC_ARCHIVE;
			return;
		}
	}
	if (s->o.symfs && f->path[0] == '/') {
		snprintf(p, sizeof(p), "%s%s", s->o.symfs, f->path);
		if (file_try_path(s, f, p) == 0) {
			f->source = SRC_SYMFS;
			return;
		}
		snprintf(p, sizeof(p), "%s/%s", s->o.symfs, f->module);
		if (file_try_path(s, f, p) == 0) {
			f->source = SRC_SYMFS;
			return;
		}
	}
	/* The original file (when its build-id matches) before a separate debug file: it has the
	 * unwind tables, and libdwfl still reads the debug file's symbols and DWARF beside it. */
	if (f->path[0] == '/' && file_try_path(s, f, f->path) == 0) {
		f->source = SRC_PATH;
		return;
	}
	if (f->build_id_len > 1) {
		ana_symf_bid_hex(f->build_id, f->build_id_len, hex);
		if (s->o.symfs) {
			snprintf(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", s->o.symfs, hex, hex + 2);
			if (file_try_path(s, f, p) == 0) {
				f->source = SRC_DEBUGDIR;
				return;
			}
		}
		snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
		if (file_try_path(s, f, p) == 0) {
			f->source = SRC_DEBUGDIR;
			return;
		}
	}
	if (!f->why) {
		if (f->path[0] == '/' || s->o.symfs)
			f->why = strdup(s->o.no_archive ? "not found (archive ignored: --no-archive)"
			                                 : "not found in the trace's archive or on disk");
		else
			f->why = strdup("no file behind this mapping");
	}
}

/* The file of a mapping, created on first use (not yet resolved). NULL on ENOMEM. */
sym_file *ana_symf_get(ana_sym *s, const gtt_mapping *mp)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s", mp->path ? mp->path : "");
	size_t len = strlen(path);
	static const char deleted[] = " (deleted)";
	if (len > sizeof(deleted) - 1 && strcmp(path + len - (sizeof(deleted) - 1), deleted) == 0)
		path[len - (sizeof(deleted) - 1)] = 0;
	gtt_mapping key = *mp;
	key.path = path;
	uint64_t h = mp->build_id_len ? ana_hash_bytes(mp->build_id, mp->build_id_len, 1)
	                              : ana_hash_bytes(path, strlen(path), 2);
	uint32_t *slot = ana_idtable_slot(&s->file_table, h, file_eq, &key, s);
	if (!slot)
		return NULL;
	if (*slot)
		return s->files.v[*slot - 1];
	sym_file *f = calloc(1, sizeof(*f));
	sym_file **e = f ? ana_vec_push(s->files) : NULL;
	if (!e) {
		free(f);
		return NULL;
	}
	*e = f;
	f->memfd = -1;
	f->sym = s;
	f->id = (uint32_t)s->files.n - 1;
	f->build_id_len = mp->build_id_len;
	memcpy(f->build_id, mp->build_id, mp->build_id_len);
	f->path = ana_intern_str(s->m, path);
	f->module = ana_intern_str(s->m, path[0] ? base_name(path) : "[anon]");
	if (!f->path || !f->module)
		return NULL;
	*slot = f->id + 1;
	s->file_table.n++;
	return f;
}

int ana_symf_bias(const sym_file *f, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	if (f->et_exec) {
		*bias = 0;
		return 0;
	}
	const load_seg *use = NULL;
	for (size_t i = 0; i < f->n_segs; i++) {
		const load_seg *g = &f->segs[i];
		if (pgoff >= (g->offset & ~(uint64_t)0xfff) && pgoff < g->offset + g->filesz) {
			use = g;
			break;
		}
	}
	if (use) {
		*bias = start - pgoff + use->offset - use->vaddr;
		return 0;
	}
	/* A separate debug file keeps the program headers but not the file offsets (its segments
	 * have no file bytes): take the executable segment and assume the mapping starts it. */
	for (size_t i = 0; i < f->n_segs; i++) {
		const load_seg *g = &f->segs[i];
		if ((g->flags & PF_X) && g->filesz == 0) {
			*bias = start - (g->vaddr & ~(uint64_t)0xfff);
			return 0;
		}
	}
	return -1;
}

/* Bytes at link-time address vaddr of an ELF, from the section that holds them. Sections, not
 * segments: an embedded archive keeps the original program headers but moves the section
 * contents, and a separate debug file has none. NULL when the bytes are not in the file. */
const uint8_t *ana_symf_bytes_at(Elf *elf, uint64_t vaddr, size_t need)
{
	size_t size = 0;
	const uint8_t *raw = elf ? (const uint8_t *)elf_rawfile(elf, &size) : NULL;
	Elf_Scn *scn = NULL;
	if (!raw)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || sh.sh_type == SHT_NOBITS)
			continue;
		if (vaddr < sh.sh_addr || vaddr - sh.sh_addr > sh.sh_size || sh.sh_size - (vaddr - sh.sh_addr) < need)
			continue;
		uint64_t off = sh.sh_offset + (vaddr - sh.sh_addr);
		if (off > size || size - off < need)
			return NULL;
		return raw + off;
	}
	return NULL;
}

/* Start addresses of the FDEs in a file's .eh_frame_hdr search table (link-time addresses,
 * sorted), read once per file through the ELF of a module of it. */
static void fde_load(sym_file *f, Dwfl_Module *dm)
{
	GElf_Addr bias;
	size_t phnum = 0;
	f->fde_loaded = 1;
	Elf *elf = dm ? dwfl_module_getelf(dm, &bias) : NULL;
	if (!elf || elf_getphdrnum(elf, &phnum) != 0)
		return;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME || ph.p_memsz < 12)
			continue;
		const uint8_t *h = ana_symf_bytes_at(elf, ph.p_vaddr, 12);
		/* version 1; eh_frame_ptr any 4-byte encoding; count udata4; table datarel sdata4 */
		if (!h || h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b || (h[1] & 0x0f) != 0x0b)
			return;
		uint32_t count;
		memcpy(&count, h + 8, 4);
		if (count == 0 || count > (1u << 26))
			return;
		h = ana_symf_bytes_at(elf, ph.p_vaddr, 12 + (size_t)count * 8);
		if (!h)
			return;
		f->fde_starts = malloc(count * sizeof(uint64_t));
		if (!f->fde_starts)
			return;
		for (uint32_t k = 0; k < count; k++) {
			int32_t loc;
			memcpy(&loc, h + 12 + (size_t)k * 8, 4);
			f->fde_starts[k] = ph.p_vaddr + (uint64_t)(int64_t)loc;
		}
		f->n_fde = count;
		return;
	}
}

/* The start of the unwind-table entry (function) containing link-time address rel, or rel. */
uint64_t ana_symf_fde_start(sym_file *f, Dwfl_Module *dm, uint64_t rel)
{
	if (!f->fde_loaded)
		fde_load(f, dm);
	if (!f->n_fde || rel < f->fde_starts[0])
		return rel;
	size_t lo = 0, hi = f->n_fde;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (f->fde_starts[mid] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return f->fde_starts[lo];
}

int ana_sym_add_archive(ana_sym *s, const uint8_t *build_id, uint32_t build_id_len, const char *path,
                        uint8_t *data, size_t len)
{
	sym_archive *a = ana_vec_push(s->archives);
	if (!a) {
		free(data);
		return GTT_ENOMEM;
	}
	if (build_id_len > GTT_BUILD_ID_MAX)
		build_id_len = GTT_BUILD_ID_MAX;
	memcpy(a->build_id, build_id, build_id_len);
	a->build_id_len = build_id_len;
	a->path = path ? strdup(path) : NULL;
	a->data = data;
	a->len = len;
	return 0;
}

size_t ana_sym_missing(const ana_sym *s, const char *const **lines)
{
	ana_sym *w = (ana_sym *)s;
	if (!w->missing_built) {
		w->missing_built = 1;
		for (size_t i = 0; i < w->files.n; i++) {
			const sym_file *f = w->files.v[i];
			/* pseudo-files ([vdso], anonymous JIT code) have no file to look for */
			if (!f->hit_missing || f->path[0] != '/')
				continue;
			char hex[2 * GTT_BUILD_ID_MAX + 1], line[1200];
			ana_symf_bid_hex(f->build_id, f->build_id_len, hex);
			snprintf(line, sizeof(line), "no symbols for %s (build-id %s): %s", f->path[0] ? f->path : "[anon]",
			         f->build_id_len ? hex : "none", f->why ? f->why : "unknown reason");
			char *copy = strdup(line);
			char **e = copy ? ana_vec_push(w->missing) : NULL;
			if (!e) {
				free(copy);
				break;
			}
			*e = copy;
		}
	}
	*lines = (const char *const *)w->missing.v;
	return w->missing.n;
}


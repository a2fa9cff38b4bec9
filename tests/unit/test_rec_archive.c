/* test_rec_archive.c — the archive's ELF copies against their originals, read with libdw: for
 * addresses a recording used, the copy whose .eh_frame was cut down to those functions gives
 * the same call-frame rules (CFA and return address) as the original, its rebuilt
 * .eh_frame_hdr table is sorted and points at the right entries, and the symbol tables name
 * the same functions. Run on libc and on this test program. */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "elf.h"
#include "testhelp.h"

static uint64_t lcg_state = 99;
static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return lcg_state >> 17;
}

/* An Elf over a memory image (libelf reads it in place). */
static Elf *elf_mem(uint8_t *p, size_t n)
{
	return elf_memory((char *)p, n);
}

/* Link-time start and size of the section called name; 0 when missing. */
static uint64_t section(Elf *e, const char *name, uint64_t *size, uint64_t *off)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (n && strcmp(n, name) == 0) {
			*size = sh.sh_size;
			if (off)
				*off = sh.sh_offset;
			return sh.sh_addr;
		}
	}
	return 0;
}

/* The CFA and return-address rules at addr, as text (empty when no CFI covers it). */
static void rules(Dwarf_CFI *cfi, uint64_t addr, char *out, size_t cap)
{
	Dwarf_Frame *fr = NULL;
	out[0] = 0;
	if (!cfi || dwarf_cfi_addrframe(cfi, addr, &fr) != 0)
		return;
	Dwarf_Op *ops = NULL, ra_ops[3];
	size_t nops = 0, nra = 0;
	size_t k = 0;
	if (dwarf_frame_cfa(fr, &ops, &nops) == 0)
		for (size_t i = 0; i < nops && k + 64 < cap; i++)
			k += (size_t)snprintf(out + k, cap - k, "%u:%llu:%llu ", ops[i].atom, (unsigned long long)ops[i].number,
			                      (unsigned long long)ops[i].number2);
	Dwarf_Op *rops = ra_ops;
	if (dwarf_frame_register(fr, 16, ra_ops, &rops, &nra) == 0)
		for (size_t i = 0; i < nra && k + 64 < cap; i++)
			k += (size_t)snprintf(out + k, cap - k, "ra%u:%llu ", rops[i].atom, (unsigned long long)rops[i].number);
	Dwarf_Addr start = 0, end = 0;
	bool signalp = false;
	if (dwarf_frame_info(fr, &start, &end, &signalp) >= 0 && k + 64 < cap)
		snprintf(out + k, cap - k, "[%llx,%llx)", (unsigned long long)start, (unsigned long long)end);
	free(fr);
}

/* Symbols only: no debug file, so that both images are judged on their own tables. */
static int no_debuginfo(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base, const char *file,
                        const char *link, GElf_Word crc, char **out)
{
	(void)mod; (void)ud; (void)modname; (void)base; (void)file; (void)link; (void)crc; (void)out;
	return -1;
}

/* "name+off" for each address through libdwfl's lookup of the image in p[0..n), as gt-analyze
 * names frames. */
static char **dwfl_names(const uint8_t *p, size_t n, const uint64_t *vaddr, int count)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks cb = { .find_elf = dwfl_build_id_find_elf, .find_debuginfo = no_debuginfo,
	                                   .section_address = dwfl_offline_section_address,
	                                   .debuginfo_path = &debuginfo_path };
	char path[] = "/tmp/gt-arch-XXXXXX";
	int fd = mkstemp(path);
	char **out = calloc((size_t)count, sizeof(*out));
	if (fd < 0 || write(fd, p, n) != (ssize_t)n) {
		if (fd >= 0)
			close(fd);
		return out;
	}
	Dwfl *d = dwfl_begin(&cb);
	dwfl_report_begin(d);
	Dwfl_Module *m = dwfl_report_elf(d, "m", path, fd, 0, true);
	dwfl_report_end(d, NULL, NULL);
	GElf_Addr bias = 0;
	if (m)
		dwfl_module_getelf(m, &bias);
	for (int i = 0; i < count; i++) {
		GElf_Off off = 0;
		GElf_Sym sym;
		const char *name = m ? dwfl_module_addrinfo(m, vaddr[i] + bias, &off, &sym, NULL, NULL, NULL) : NULL;
		char buf[1024];
		snprintf(buf, sizeof(buf), "%s+%llx", name ? name : "?", (unsigned long long)off);
		out[i] = strdup(buf);
	}
	dwfl_end(d);
	unlink(path);
	return out;
}

static void check_file(const char *path, const char *label)
{
	rec_elf *re = rec_elf_open(path);
	size_t len = 0;
	const uint8_t *data = re ? rec_elf_data(re, &len) : NULL;
	if (!data) {
		printf("SKIP: %s: cannot open %s\n", label, path);
		rec_elf_close(re);
		return;
	}
	uint8_t *orig = malloc(len);
	memcpy(orig, data, len);
	Elf *eo = elf_mem(orig, len);
	uint64_t tsize = 0, toff = 0, taddr = section(eo, ".text", &tsize, &toff);
	/* addresses a recording could have used: 400 in .text, as file offsets, sorted */
	enum { N = 400 };
	uint64_t hits[N], vaddr[N];
	for (int i = 0; i < N; i++)
		vaddr[i] = taddr + lcg() % (tsize ? tsize : 1);
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			if (vaddr[j] < vaddr[i]) {
				uint64_t t = vaddr[i];
				vaddr[i] = vaddr[j];
				vaddr[j] = t;
			}
	for (int i = 0; i < N; i++)
		hits[i] = vaddr[i] - taddr + toff; /* .text: file offset = address - sh_addr + sh_offset */
	rec_trim_opts o = { .hits = hits, .n_hits = N };
	rec_trim_info info;
	size_t tlen = 0, flen = 0;
	uint8_t *cut = rec_archive_trim(data, len, &o, &tlen, &info);
	uint8_t *full = rec_archive_trim_elf(data, len, &flen);
	th_check(cut && !info.cfi_whole && info.n_fde_kept > 0 && info.n_fde_kept < info.n_fde,
	         "%s: .eh_frame cut to %u of %u entries for %d addresses (%zu -> %zu bytes)", label,
	         info.n_fde_kept, info.n_fde, N, flen, tlen);
	if (!cut || !full) {
		free(cut);
		free(full);
		free(orig);
		elf_end(eo);
		rec_elf_close(re);
		return;
	}
	Elf *ec = elf_mem(cut, tlen);
	Dwarf_CFI *co = dwarf_getcfi_elf(eo), *cc = dwarf_getcfi_elf(ec);
	int same = 0, covered = 0;
	char a[512], b[512];
	for (int i = 0; i < N; i++) {
		rules(co, vaddr[i], a, sizeof(a));
		rules(cc, vaddr[i], b, sizeof(b));
		same += strcmp(a, b) == 0;
		covered += a[0] != 0;
	}
	th_check(same == N && covered > N / 2, "%s: the same CFA and return-address rules at all %d addresses (%d same, "
	         "%d with CFI)", label, N, same, covered);
	/* the rebuilt search table: sorted, each entry at an FDE that starts where it says */
	uint64_t hsize = 0, hoff = 0, haddr = section(ec, ".eh_frame_hdr", &hsize, &hoff);
	uint64_t esize = 0, eoff = 0, eaddr = section(ec, ".eh_frame", &esize, &eoff);
	int table_ok = haddr && hsize >= 12 && cut[hoff] == 1 && cut[hoff + 3] == 0x3b;
	uint32_t count = 0;
	if (table_ok) {
		memcpy(&count, cut + hoff + 8, 4);
		table_ok = count == info.n_fde_kept && 12 + (uint64_t)count * 8 <= hsize;
	}
	int64_t prev = INT64_MIN;
	for (uint32_t k = 0; table_ok && k < count; k++) {
		int32_t loc, fde;
		memcpy(&loc, cut + hoff + 12 + k * 8, 4);
		memcpy(&fde, cut + hoff + 16 + k * 8, 4);
		uint64_t fde_addr = haddr + (uint64_t)(int64_t)fde;
		if (loc < prev || fde_addr < eaddr || fde_addr + 16 > eaddr + esize) {
			table_ok = 0;
			break;
		}
		prev = loc;
		/* the FDE's own rules start at the table's address */
		char r[512];
		rules(cc, haddr + (uint64_t)(int64_t)loc, r, sizeof(r));
		char want[64];
		snprintf(want, sizeof(want), "[%llx,", (unsigned long long)(haddr + (uint64_t)(int64_t)loc));
		if (!strstr(r, want))
			table_ok = 0;
	}
	th_check(table_ok, "%s: the rebuilt .eh_frame_hdr lists the %u kept entries, sorted, each where it points", label,
	         count);
	/* names: libdwfl's lookup gives the same symbol and offset from the cut tables */
	char **na = dwfl_names(orig, len, vaddr, N), **nc = dwfl_names(cut, tlen, vaddr, N);
	uint64_t before[N];
	for (int i = 0; i < N; i++)
		before[i] = vaddr[i] - 1;
	char **nb = dwfl_names(orig, len, before, N), **nd = dwfl_names(cut, tlen, before, N);
	int same_before = 0;
	for (int i = 0; i < N; i++) {
		same_before += nb[i] && nd[i] && strcmp(nb[i], nd[i]) == 0;
		free(nb[i]);
		free(nd[i]);
	}
	free(nb);
	free(nd);
	th_check(same_before == N, "%s: and alike one byte below each (a caller's frame is looked up there)", label);
	int same_names = 0, named = 0;
	for (int i = 0; i < N; i++) {
		same_names += na[i] && nc[i] && strcmp(na[i], nc[i]) == 0;
		named += na[i] && na[i][0] != '?';
		if (na[i] && nc[i] && strcmp(na[i], nc[i]) != 0 && same_names + 3 > i)
			printf("  %s: %llx: %s vs %s\n", label, (unsigned long long)vaddr[i], na[i], nc[i]);
		free(na[i]);
		free(nc[i]);
	}
	free(na);
	free(nc);
	th_check(same_names == N && named > 0 && info.n_syms_kept < info.n_syms,
	         "%s: libdwfl names all %d addresses alike (%d named) from %llu of %llu symbols", label, N, named,
	         (unsigned long long)info.n_syms_kept, (unsigned long long)info.n_syms);
	dwarf_cfi_end(co);
	dwarf_cfi_end(cc);
	elf_end(ec);
	elf_end(eo);
	free(cut);
	free(full);
	free(orig);
	rec_elf_close(re);
}

/* A form the filter does not know keeps the table whole rather than guessing. */
static void check_unknown_form(void)
{
	rec_elf *re = rec_elf_open("/proc/self/exe");
	size_t len = 0;
	const uint8_t *data = re ? rec_elf_data(re, &len) : NULL;
	if (!data)
		return;
	uint8_t *img = malloc(len);
	memcpy(img, data, len);
	Elf *e = elf_mem(img, len);
	uint64_t esize = 0, eoff = 0;
	section(e, ".eh_frame", &esize, &eoff);
	elf_end(e);
	/* the first CIE's augmentation string gets an unknown letter */
	int done = 0;
	for (uint64_t k = eoff + 9; k + 2 < eoff + esize && k < eoff + 64; k++)
		if (img[k] == 'z' && img[k + 1] == 'R') {
			img[k + 1] = 'Q';
			done = 1;
			break;
		}
	uint64_t hit = 0x1000;
	rec_trim_opts o = { .hits = &hit, .n_hits = 1 };
	rec_trim_info info;
	size_t tlen = 0;
	uint8_t *cut = done ? rec_archive_trim(img, len, &o, &tlen, &info) : NULL;
	th_check(done && cut && info.cfi_whole, "an unknown CIE augmentation keeps .eh_frame whole");
	free(cut);
	free(img);
	rec_elf_close(re);
}

int main(void)
{
	elf_version(EV_CURRENT);
	check_file("/proc/self/exe", "this test program");
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	if (access(libc, R_OK) != 0)
		libc = "/usr/lib64/libc.so.6";
	check_file(libc, "libc");
	check_unknown_form();
	return th_report();
}

/* fuzz_unwind.c — libFuzzer target: gt-record's CFI unwinder and symbol tables (record/elfimg.c,
 * unwind.c, symtab.c) over arbitrary bytes taken as an ELF image: tables are built, a few
 * hundred pcs looked up and stepped from with a fake stack. Every read of the image must stay
 * inside it; no step may crash or loop.
 * Seeds: ELF in build/fuzz/obj /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/bin/true
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elfimg.h"
#include "symtab.h"
#include "unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;
static uint64_t fake_stack[128];

static int read_fake(void *ctx, uint64_t addr, uint64_t *val)
{
	(void)ctx;
	if (addr < 0x10000 || addr - 0x10000 >= sizeof(fake_stack) || (addr & 7))
		return -1;
	*val = fake_stack[(addr - 0x10000) / 8];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the image must be 8-aligned, as a mapping is: copy it */
	uint8_t *copy = malloc(size ? size : 1);
	rec_elfimg img;
	rec_unw_tab *t;
	rec_symtab *s;
	uint64_t pc, span = 0;
	size_t i;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (rec_elfimg_init(&img, copy, size) < 0) {
		free(copy);
		return 0;
	}
	for (i = 0; i < 128; i++)
		fake_stack[i] = 0x1000 + i * 0x40;
	t = rec_unw_tab_create(&img, &img);
	s = rec_symtab_create(&img, NULL);
	sink += rec_unw_tab_fdes(t) + rec_symtab_count(s);
	{
		rec_elfsec text;
		if (rec_elfimg_section(&img, ".text", &text) == 0)
			span = text.size;
	}
	for (i = 0, pc = 0x1000; i < 256; i++, pc += 1 + (span / 256)) {
		rec_unw_regs r;
		uint64_t off, start, v;
		int sig, k;
		const char *name = rec_symtab_lookup(s, pc, &off);

		if (name)
			sink += strlen(name) + off;
		if (rec_unw_func_start(t, pc, &start) == 0)
			sink += start;
		memset(&r, 0, sizeof(r));
		r.r[REC_UNW_IP] = pc;
		r.r[REC_UNW_SP] = 0x10000 + 64;
		r.r[REC_UNW_BP] = 0x10000 + 256;
		r.valid = 1u << REC_UNW_IP | 1u << REC_UNW_SP | 1u << REC_UNW_BP;
		for (k = 0; k < 8 && rec_unw_step(t, 0, &r, k > 0, &sig, read_fake, NULL) == 0; k++)
			sink += r.r[REC_UNW_IP];
		if (rec_elfimg_offset_to_vaddr(&img, pc, &v) == 0)
			sink += v;
	}
	{
		uint8_t id[64];
		sink += rec_elfimg_build_id(&img, id, sizeof(id));
	}
	rec_symtab_destroy(s);
	rec_unw_tab_destroy(t);
	free(copy);
	return 0;
}

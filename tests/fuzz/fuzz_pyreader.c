/* fuzz_pyreader.c — libFuzzer target: the CPython structure reader (record/pyoffsets.c) over fake
 * target memory, which is what a hostile or dying target can show the recorder.
 *
 * Byte 0 picks the layout: CPython 3.10, 3.11, 3.12 tables, or 3.13 from a _Py_DebugOffsets
 * block at the start of the memory (the offsets themselves come from the target). The rest is
 * the memory: readable from FAKE_BASE, repeated every len bytes up to 4 GiB above it (so any
 * pointer below 4 GiB leads somewhere), unreadable elsewhere. From a thread state at the first
 * u64 (3.13: the u64 after the 1 KiB debug block), the reader walks threads, frames, code
 * objects (every other thread's prefetched first, as a pass reads new ones), strings, line
 * tables and the GIL, and (record/pythreads.c) the threading module's
 * registry of thread names from the first thread's interpreter, with the u64 after the thread
 * state pointer as PyDict_Type. tests/fuzz/mkseeds.sh makes 3.13 seeds from the
 * _Py_DebugOffsets of a local libpython3.13, when there is one.
 * Seeds: .pymem in testdata build/fuzz/seeds
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gtt.h"
#include "procmem.h"
#include "pyoffsets.h"
#include "pythreads.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAKE_BASE 0x1000ull
#define FAKE_SPAN (1ull << 32)

typedef struct fake { const uint8_t *p; size_t n; } fake;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const fake *f = ctx;
	if (addr < FAKE_BASE || addr - FAKE_BASE >= FAKE_SPAN || len > FAKE_SPAN - (addr - FAKE_BASE))
		return -1;
	uint8_t *out = buf;
	size_t at = (size_t)((addr - FAKE_BASE) % f->n);
	while (len) {
		size_t k = f->n - at < len ? f->n - at : len;
		memcpy(out, f->p + at, k);
		out += k;
		len -= k;
		at = 0;
	}
	return 0;
}

static volatile uint64_t sink;

static void check_str(const char *s, size_t cap)
{
	if (!s)
		return;
	size_t n = strnlen(s, cap);
	if (n >= cap)
		abort(); /* not terminated inside the buffer */
	sink += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 9)
		return 0;
	int mode = data[0] & 3;
	fake mem = { data + 1, size - 1 };
	rec_pyoff dbg;
	const rec_pyoff *o;
	char err[256];

	/* the line-table decoders straight on the bytes */
	int64_t index = (int64_t)(data[0] >> 2) * 3 - 1;
	sink += (uint64_t)rec_py_line(REC_PY_LINES_310, mem.p, mem.n, 1, index);
	sink += (uint64_t)rec_py_line(REC_PY_LINES_311, mem.p, mem.n, 1, index);

	if (mode == 3) {
		uint8_t block[REC_PY_DEBUG_OFFSETS_LEN];
		size_t k = mem.n < sizeof(block) ? mem.n : sizeof(block);
		memcpy(block, mem.p, k);
		if (rec_pyoff_from_debug(block, k, &dbg, err, sizeof(err)) != 0) {
			check_str(err, sizeof(err));
			return 0;
		}
		o = &dbg;
	} else {
		o = rec_pyoff_table(10 + mode);
		if (!o)
			abort();
	}
	rec_procmem *m = rec_procmem_open_fn(fake_read, &mem);
	if (!m)
		abort();
	uint64_t ts = 0;
	size_t ts_at = mode == 3 ? REC_PY_DEBUG_OFFSETS_LEN : 0;
	if (mem.n >= ts_at + 8)
		memcpy(&ts, mem.p + ts_at, 8);
	uint64_t dict_type = 0, interp = 0;
	if (mem.n >= ts_at + 16)
		memcpy(&dict_type, mem.p + ts_at + 8, 8);
	rec_pyframe_raw raw[64];
	for (int t = 0; t < 4 && ts; t++) {
		rec_pythread th;
		if (rec_py_read_thread(m, o, ts, &th) != 0)
			break;
		int torn = 0;
		int n = rec_py_read_frames(m, o, th.frame, raw, 64, &torn);
		if (n > 64)
			abort();
		if (t & 1) {
			/* every other thread's code objects read the way a pass reads new ones: prefetched
			 * in three batched reads (lengths and pointers from the target), then served */
			uint64_t codes[64];
			for (int i = 0; i < n; i++)
				codes[i] = raw[i].code;
			if (n > 0 && rec_py_codes_prefetch(m, o, codes, (size_t)n, 0) < -4096)
				abort();
		}
		for (int i = 0; i < n; i++) {
			rec_pycode code;
			if (rec_py_read_code(m, o, raw[i].code, 0, &code) != 0)
				continue;
			check_str(code.name, 1024);
			check_str(code.qualname, 1024);
			check_str(code.filename, 1024);
			sink += (uint64_t)rec_py_line(o->line_format, code.linetable, code.linetable_len,
			                              code.firstlineno, raw[i].index);
			if (rec_py_code_same(m, o, raw[i].code, &code) < -1)
				abort();
			rec_pycode_clear(&code);
		}
		rec_procmem_prefetch_drop(m);
		char s[16];
		if (rec_py_read_str(m, o, th.interp, s, sizeof(s)) >= (int)sizeof(s))
			abort();
		if (!interp)
			interp = th.interp;
		ts = th.next;
	}
	/* thread names: twice, the second time through the change checks */
	rec_pynames *names = rec_pynames_create(o, dict_type);
	if (!names)
		abort();
	for (int k = 0; k < 2 && interp; k++) {
		const rec_pyname *nm = NULL;
		size_t n_nm = 0;
		if (rec_pynames_poll(names, m, interp, (uint64_t)k * 20000000000ull, &nm, &n_nm) == 1)
			for (size_t i = 0; i < n_nm; i++)
				check_str(nm[i].name, sizeof(nm[i].name));
	}
	rec_pynames_destroy(names);
	rec_pygil gil;
	uint64_t gil_addr = rec_py_gil_addr(m, o, FAKE_BASE);
	if (gil_addr)
		rec_py_read_gil(m, o, gil_addr, &gil);
	rec_procmem_close(m);
	return 0;
}

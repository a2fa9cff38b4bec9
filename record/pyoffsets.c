/* pyoffsets.c — CPython struct layouts per version and the reader that walks them in another
 * process: thread states, frame chains, code objects, str objects, the GIL. */
#include "pyoffsets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gtt.h"

/* Sizes of the buffers the reader reads each struct's fields into: every offset (plus the
 * field's width) must fit the buffer it indexes. The tables below do; offsets taken from the
 * target (3.13 debug offsets) are checked against these when loaded (check_buffers) and again
 * where a buffer is smaller than the struct it holds part of. */
#define TS_BUF 512        /* PyThreadState fields */
#define FR_BUF 256        /* frame fields */
#define GIL_BUF 320       /* struct _gil_runtime_state fields */
#define CODE_BUF 512      /* PyCodeObject header fields */
#define BYTES_HEAD 64     /* PyBytesObject header up to ob_sval */
#define STR_HEAD 256      /* str header (PyCompactUnicodeObject) */
#define STR_DUP_MAX 1024 /* a code object's names: bytes kept, NUL included */

/* Offsets taken from the CPython headers of each version (Include/cpython/pystate.h,
 * Include/internal/pycore_{runtime,interp,gil,frame}.h, Include/cpython/{code,frameobject,
 * unicodeobject,bytesobject}.h) for a release (non-debug) LP64 build. */
static const rec_pyoff table_310 = {
	.version_hex = 0x030a0000,
	.rt_interp_head = 32, .rt_gil = 352,
	.is_next = 0, .is_threads_head = 8, .is_gil_ptr = -1,
	.gil_holder = 8, .gil_locked = 16, .gil_switches = 24,
	.ts_next = 8, .ts_interp = 16, .ts_thread_id = 176, .ts_native_tid = -1,
	.ts_frame = 24, .ts_cframe = -1, .cf_current_frame = -1,
	.frame_kind = REC_PY_FRAMEOBJ,
	.fr_previous = 24, .fr_code = 32, .fr_instr = -1, .fr_is_entry = -1, .fr_owner = -1,
	.fr_lasti = 96, .instr_is_prev = 0,
	.co_filename = 104, .co_name = 112, .co_qualname = -1, .co_firstlineno = 40,
	.co_linetable = 120, .co_code_adaptive = -1, .line_format = REC_PY_LINES_310,
	.ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
	.str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72,
	.is_modules = 856, .dict_version = 24, .dict_keys = 32, .dict_values = 40,
	.dk_size = 8, .dk_log2_size = -1, .dk_log2_index_bytes = -1, .dk_kind = -1,
	.dk_nentries = 32, .dk_indices = 40, .dv_values = 0, .md_dict = 16,
	.tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288, .ht_cached_keys = 872,
	.attrs = REC_PY_ATTRS_DICTOFFSET,
};

static const rec_pyoff table_311 = {
	.version_hex = 0x030b0000,
	.rt_interp_head = 40, .rt_gil = 360,
	.is_next = 0, .is_threads_head = 16, .is_gil_ptr = -1,
	.gil_holder = 8, .gil_locked = 16, .gil_switches = 24,
	.ts_next = 8, .ts_interp = 16, .ts_thread_id = 152, .ts_native_tid = 160,
	.ts_frame = -1, .ts_cframe = 56, .cf_current_frame = 8,
	.frame_kind = REC_PY_IFRAME,
	.fr_previous = 48, .fr_code = 32, .fr_instr = 56, .fr_is_entry = 68, .fr_owner = 69,
	.fr_lasti = -1, .instr_is_prev = 1,
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72,
	.co_linetable = 136, .co_code_adaptive = 184, .line_format = REC_PY_LINES_311,
	.ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
	.str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72,
	.is_modules = 888, .dict_version = 24, .dict_keys = 32, .dict_values = 40,
	.dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	.dk_nentries = 24, .dk_indices = 32, .dv_values = 0, .md_dict = 16,
	.tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288, .ht_cached_keys = 872,
	.attrs = REC_PY_ATTRS_MANAGED_311,
};

static const rec_pyoff table_312 = {
	.version_hex = 0x030c0000,
	.rt_interp_head = 40, .rt_gil = -1,
	.is_next = 0, .is_threads_head = 72, .is_gil_ptr = 384,
	.gil_holder = 8, .gil_locked = 16, .gil_switches = 24,
	.ts_next = 8, .ts_interp = 16, .ts_thread_id = 136, .ts_native_tid = 144,
	.ts_frame = -1, .ts_cframe = 56, .cf_current_frame = 0,
	.frame_kind = REC_PY_IFRAME,
	.fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_is_entry = -1, .fr_owner = 70,
	.fr_lasti = -1, .instr_is_prev = 1,
	.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
	.co_linetable = 136, .co_code_adaptive = 192, .line_format = REC_PY_LINES_311,
	.ob_type = 8, .bytes_size = 16, .bytes_sval = 32,
	.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56,
	.is_modules = 944, .dict_version = 24, .dict_keys = 32, .dict_values = 40,
	.dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	.dk_nentries = 24, .dk_indices = 32, .dv_values = 0, .md_dict = 16,
	.tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288, .ht_cached_keys = 880,
	.attrs = REC_PY_ATTRS_MANAGED_312,
};

/* 3.13's dict-keys and type layout (not among its debug offsets; sys.modules, ma_keys,
 * ma_values and tp_flags are, and those come from the target) */
static const rec_pyoff dicts_313 = {
	.dict_version = 24, .dk_size = -1, .dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	.dk_nentries = 24, .dk_indices = 32, .dv_values = 8, .md_dict = 16,
	.tp_basicsize = 32, .tp_dictoffset = 288, .ht_cached_keys = 880,
	.attrs = REC_PY_ATTRS_INLINE_313,
};

#define FRAME_OWNED_BY_CSTACK 3 /* 3.12+: a shim frame the eval loop pushes on entry from C */

const rec_pyoff *rec_pyoff_table(int minor)
{
	switch (minor) {
	case 10: return &table_310;
	case 11: return &table_311;
	case 12: return &table_312;
	default: return NULL;
	}
}

/* ---- _Py_DebugOffsets (3.13) ----
 * After the 8-byte cookie "xdebugpy" come u64 fields; these are their indexes in the 3.13
 * layout (Include/internal/pycore_runtime.h). The layout may change between minor versions,
 * so only 3.13 is accepted. */
enum {
	DO_VERSION = 0, DO_FREE_THREADED = 1,
	DO_RT_SIZE = 2, DO_RT_INTERP_HEAD = 4,
	DO_IS_SIZE = 5, DO_IS_NEXT = 7, DO_IS_THREADS_HEAD = 8, DO_IS_MODULES = 10, DO_IS_CEVAL_GIL = 13,
	DO_IS_GIL_STATE = 14, DO_GIL_LOCKED = 16, DO_GIL_HOLDER = 17,
	DO_TS_SIZE = 18, DO_TS_NEXT = 20, DO_TS_INTERP = 21, DO_TS_CURRENT_FRAME = 22,
	DO_TS_THREAD_ID = 23, DO_TS_NATIVE_TID = 24,
	DO_FR_SIZE = 27, DO_FR_PREVIOUS = 28, DO_FR_EXECUTABLE = 29, DO_FR_INSTR_PTR = 30, DO_FR_OWNER = 32,
	DO_CO_SIZE = 33, DO_CO_FILENAME = 34, DO_CO_NAME = 35, DO_CO_QUALNAME = 36, DO_CO_LINETABLE = 37,
	DO_CO_FIRSTLINENO = 38, DO_CO_CODE_ADAPTIVE = 42,
	DO_OB_TYPE = 44, DO_TP_SIZE = 45, DO_TP_FLAGS = 48, DO_DICT_SIZE = 55, DO_DICT_KEYS = 56, DO_DICT_VALUES = 57,
	DO_BYTES_SIZE = 63, DO_BYTES_OB_SIZE = 64, DO_BYTES_SVAL = 65,
	DO_STR_SIZE = 66, DO_STR_STATE = 67, DO_STR_LENGTH = 68, DO_STR_ASCII_SIZE = 69,
	DO_COUNT_313 = 72,
};

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int rec_pyoff_has_debug(const uint8_t *buf, size_t len, uint32_t *version_hex)
{
	if (len < 16 || memcmp(buf, "xdebugpy", 8) != 0)
		return 0;
	if (version_hex)
		*version_hex = (uint32_t)get_u64(buf + 8);
	return 1;
}

/* Every field the reader reads must fit the buffer it reads that struct into (offsets of -1
 * are fields the version lacks). A layout that fails is refused with the first field that
 * does not fit; 0 or -EINVAL. */
static int check_buffers(const rec_pyoff *o, char *err, size_t errlen)
{
	const struct { const char *what; int32_t off, width, limit; } f[] = {
		{ "PyThreadState.next", o->ts_next, 8, TS_BUF },
		{ "PyThreadState.interp", o->ts_interp, 8, TS_BUF },
		{ "PyThreadState.thread_id", o->ts_thread_id, 8, TS_BUF },
		{ "PyThreadState.native_thread_id", o->ts_native_tid, 8, TS_BUF },
		{ "PyThreadState.current_frame", o->ts_frame, 8, TS_BUF },
		{ "PyThreadState.cframe", o->ts_cframe, 8, TS_BUF },
		{ "frame.previous", o->fr_previous, 8, FR_BUF },
		{ "frame.f_executable", o->fr_code, 8, FR_BUF },
		{ "frame.instr_ptr", o->fr_instr, 8, FR_BUF },
		{ "frame.is_entry", o->fr_is_entry, 8, FR_BUF },
		{ "frame.owner", o->fr_owner, 8, FR_BUF },
		{ "frame.f_lasti", o->fr_lasti, 8, FR_BUF },
		{ "gil.last_holder", o->gil_holder, 8, GIL_BUF },
		{ "gil.locked", o->gil_locked, 8, GIL_BUF },
		{ "gil.switch_number", o->gil_switches, 8, GIL_BUF },
		{ "PyObject.ob_type", o->ob_type, 8, CODE_BUF },
		{ "PyCodeObject.co_filename", o->co_filename, 8, CODE_BUF },
		{ "PyCodeObject.co_name", o->co_name, 8, CODE_BUF },
		{ "PyCodeObject.co_qualname", o->co_qualname, 8, CODE_BUF },
		{ "PyCodeObject.co_firstlineno", o->co_firstlineno, 8, CODE_BUF },
		{ "PyCodeObject.co_linetable", o->co_linetable, 8, CODE_BUF },
		/* the bytes header up to ob_sval is read whole; ob_size must lie inside it */
		{ "PyBytesObject.ob_sval", o->bytes_sval, 0, BYTES_HEAD },
		{ "PyBytesObject.ob_size", o->bytes_size, 8, o->bytes_sval },
		/* the str header is read as PyASCIIObject; length and state must lie inside it */
		{ "PyCompactUnicodeObject size", o->str_compact_size, 8, STR_HEAD },
		{ "PyASCIIObject size", o->str_ascii_size, 0, o->str_compact_size },
		{ "PyUnicodeObject.length", o->str_length, 8, o->str_ascii_size },
		{ "PyUnicodeObject.state", o->str_state, 4, o->str_ascii_size },
	};
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i].off == -1 && f[i].width > 0)
			continue;
		if (f[i].off < 0 || (int64_t)f[i].off + f[i].width > f[i].limit) {
			snprintf(err, errlen, "_Py_DebugOffsets: %s at offset %d does not fit the %d bytes read",
			         f[i].what, (int)f[i].off, (int)f[i].limit);
			return -EINVAL;
		}
	}
	return 0;
}

/* The registry fields of 3.13: from the debug offsets where they are there, else the 3.13
 * layout; a field that does not lie inside its struct is left out (-1: no thread names). */
static void set_dicts_313(rec_pyoff *out, const uint64_t *f)
{
	int ok = f[DO_IS_MODULES] + 8 <= f[DO_IS_SIZE] && f[DO_DICT_SIZE] < 4096 &&
	         f[DO_DICT_KEYS] + 8 <= f[DO_DICT_SIZE] && f[DO_DICT_VALUES] + 8 <= f[DO_DICT_SIZE] &&
	         f[DO_TP_SIZE] < 8192 && f[DO_TP_FLAGS] + 8 <= f[DO_TP_SIZE];

	out->is_modules = ok ? (int32_t)f[DO_IS_MODULES] : -1;
	out->dict_keys = ok ? (int32_t)f[DO_DICT_KEYS] : -1;
	out->dict_values = ok ? (int32_t)f[DO_DICT_VALUES] : -1;
	out->tp_flags = ok ? (int32_t)f[DO_TP_FLAGS] : -1;
	out->dict_version = dicts_313.dict_version;
	out->dk_size = dicts_313.dk_size;
	out->dk_log2_size = dicts_313.dk_log2_size;
	out->dk_log2_index_bytes = dicts_313.dk_log2_index_bytes;
	out->dk_kind = dicts_313.dk_kind;
	out->dk_nentries = dicts_313.dk_nentries;
	out->dk_indices = dicts_313.dk_indices;
	out->dv_values = dicts_313.dv_values;
	out->md_dict = dicts_313.md_dict;
	out->tp_basicsize = dicts_313.tp_basicsize;
	out->tp_dictoffset = dicts_313.tp_dictoffset;
	out->ht_cached_keys = dicts_313.ht_cached_keys;
	out->attrs = ok ? dicts_313.attrs : 0;
}

int rec_pyoff_from_debug(const uint8_t *buf, size_t len, rec_pyoff *out, char *err, size_t errlen)
{
	uint64_t f[DO_COUNT_313];
	uint32_t ver;
	int i;

	if (!rec_pyoff_has_debug(buf, len, &ver)) {
		snprintf(err, errlen, "no _Py_DebugOffsets cookie at the start of _PyRuntime");
		return -EINVAL;
	}
	if ((ver >> 16) != 0x030d) {
		snprintf(err, errlen, "CPython %u.%u: its _Py_DebugOffsets layout is not known (3.13 is)",
		         ver >> 24, (ver >> 16) & 0xff);
		return -EINVAL;
	}
	if (len < 8 + sizeof(f)) {
		snprintf(err, errlen, "_Py_DebugOffsets cut short");
		return -EINVAL;
	}
	for (i = 0; i < DO_COUNT_313; i++)
		f[i] = get_u64(buf + 8 + 8 * (size_t)i);
	if (f[DO_FREE_THREADED]) {
		snprintf(err, errlen, "free-threaded CPython build (no GIL): not supported");
		return -EINVAL;
	}
	/* every field (offset + width) must lie inside its struct, and the structs be of sane
	 * size; offset < size first, so a huge offset cannot wrap round the sum */
#define FITS(field, width, size) \
	(f[size] > 0 && f[size] < (1u << 22) && f[field] < f[size] && f[field] + (width) <= f[size])
#define INSIDE(field, size) FITS(field, 8, size)
	if (!INSIDE(DO_RT_INTERP_HEAD, DO_RT_SIZE) || !INSIDE(DO_IS_NEXT, DO_IS_SIZE) ||
	    !INSIDE(DO_IS_THREADS_HEAD, DO_IS_SIZE) || !INSIDE(DO_IS_CEVAL_GIL, DO_IS_SIZE) ||
	    !INSIDE(DO_TS_NEXT, DO_TS_SIZE) || !INSIDE(DO_TS_INTERP, DO_TS_SIZE) ||
	    !INSIDE(DO_TS_CURRENT_FRAME, DO_TS_SIZE) || !INSIDE(DO_TS_THREAD_ID, DO_TS_SIZE) ||
	    !INSIDE(DO_TS_NATIVE_TID, DO_TS_SIZE) || !INSIDE(DO_FR_PREVIOUS, DO_FR_SIZE) ||
	    !INSIDE(DO_FR_EXECUTABLE, DO_FR_SIZE) || !INSIDE(DO_FR_INSTR_PTR, DO_FR_SIZE) ||
	    !FITS(DO_FR_OWNER, 1, DO_FR_SIZE) || !INSIDE(DO_CO_FILENAME, DO_CO_SIZE) ||
	    !INSIDE(DO_CO_NAME, DO_CO_SIZE) || !INSIDE(DO_CO_QUALNAME, DO_CO_SIZE) ||
	    !INSIDE(DO_CO_LINETABLE, DO_CO_SIZE) || !FITS(DO_CO_FIRSTLINENO, 4, DO_CO_SIZE) ||
	    f[DO_CO_CODE_ADAPTIVE] > f[DO_CO_SIZE] || !INSIDE(DO_BYTES_OB_SIZE, DO_BYTES_SIZE) ||
	    f[DO_BYTES_SVAL] > f[DO_BYTES_SIZE] || !FITS(DO_STR_STATE, 4, DO_STR_SIZE) ||
	    !INSIDE(DO_STR_LENGTH, DO_STR_SIZE) || f[DO_STR_ASCII_SIZE] > f[DO_STR_SIZE] ||
	    !INSIDE(DO_IS_GIL_STATE, DO_IS_SIZE) || f[DO_GIL_LOCKED] < f[DO_IS_GIL_STATE] ||
	    f[DO_GIL_HOLDER] < f[DO_IS_GIL_STATE] || f[DO_GIL_LOCKED] - f[DO_IS_GIL_STATE] > 256 ||
	    f[DO_GIL_HOLDER] - f[DO_IS_GIL_STATE] > 256 || f[DO_OB_TYPE] > 64) {
		snprintf(err, errlen, "_Py_DebugOffsets holds impossible offsets");
		return -EINVAL;
	}
#undef INSIDE
#undef FITS
	memset(out, 0, sizeof(*out));
	out->version_hex = ver;
	out->rt_interp_head = (int32_t)f[DO_RT_INTERP_HEAD];
	out->rt_gil = -1;
	out->is_next = (int32_t)f[DO_IS_NEXT];
	out->is_threads_head = (int32_t)f[DO_IS_THREADS_HEAD];
	out->is_gil_ptr = (int32_t)f[DO_IS_CEVAL_GIL];
	/* the debug offsets give the GIL fields from the start of the interpreter's embedded
	 * _gil; we follow the ceval.gil pointer, so make them relative to the GIL struct */
	out->gil_holder = (int32_t)(f[DO_GIL_HOLDER] - f[DO_IS_GIL_STATE]);
	out->gil_locked = (int32_t)(f[DO_GIL_LOCKED] - f[DO_IS_GIL_STATE]);
	/* not in the debug offsets; in the 3.13 struct it follows `locked` (int + padding) */
	out->gil_switches = out->gil_locked == out->gil_holder + 8 ? out->gil_locked + 8 : -1;
	out->ts_next = (int32_t)f[DO_TS_NEXT];
	out->ts_interp = (int32_t)f[DO_TS_INTERP];
	out->ts_thread_id = (int32_t)f[DO_TS_THREAD_ID];
	out->ts_native_tid = (int32_t)f[DO_TS_NATIVE_TID];
	out->ts_frame = (int32_t)f[DO_TS_CURRENT_FRAME];
	out->ts_cframe = -1;
	out->cf_current_frame = -1;
	out->frame_kind = REC_PY_IFRAME;
	out->fr_previous = (int32_t)f[DO_FR_PREVIOUS];
	out->fr_code = (int32_t)f[DO_FR_EXECUTABLE];
	out->fr_instr = (int32_t)f[DO_FR_INSTR_PTR];
	out->fr_is_entry = -1;
	out->fr_owner = (int32_t)f[DO_FR_OWNER];
	out->fr_lasti = -1;
	out->instr_is_prev = 0;
	out->co_filename = (int32_t)f[DO_CO_FILENAME];
	out->co_name = (int32_t)f[DO_CO_NAME];
	out->co_qualname = (int32_t)f[DO_CO_QUALNAME];
	out->co_firstlineno = (int32_t)f[DO_CO_FIRSTLINENO];
	out->co_linetable = (int32_t)f[DO_CO_LINETABLE];
	out->co_code_adaptive = (int32_t)f[DO_CO_CODE_ADAPTIVE];
	out->line_format = REC_PY_LINES_311;
	out->ob_type = (int32_t)f[DO_OB_TYPE];
	out->bytes_size = (int32_t)f[DO_BYTES_OB_SIZE];
	out->bytes_sval = (int32_t)f[DO_BYTES_SVAL];
	out->str_length = (int32_t)f[DO_STR_LENGTH];
	out->str_state = (int32_t)f[DO_STR_STATE];
	out->str_ascii_size = (int32_t)f[DO_STR_ASCII_SIZE];
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (3.12+) */
	out->str_compact_size = (int32_t)f[DO_STR_ASCII_SIZE] + 16;
	set_dicts_313(out, f);
	return check_buffers(out, err, errlen);
}

/* ---- line tables ---- */

/* A line as the decoders return it: a torn or garbage table can sum its deltas to anything,
 * so the running line is kept in 64 bits (each byte adds at most 2^29: no table under 2^33
 * bytes can overflow that) and anything outside [0, INT32_MAX] is "unknown" (-1). */
static int line_result(int64_t line)
{
	return line < 0 || line > INT32_MAX ? -1 : (int)line;
}

/* 3.10 (PEP 626): byte pairs (start delta in bytes, signed line delta; -128 = no line). */
static int line_310(const uint8_t *tab, size_t len, int firstlineno, int64_t index)
{
	int64_t addr = index * 2, start, end = 0, line = firstlineno;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int ldelta = (int8_t)tab[i + 1];
		int64_t cur;

		start = end;
		end = start + tab[i];
		if (ldelta == -128) {
			cur = -1;
		} else {
			line += ldelta;
			cur = line;
		}
		if (addr >= start && addr < end)
			return line_result(cur);
	}
	return -1;
}

/* 6-bit little-endian varint with 0x40 as the continuation bit. */
static uint32_t varint(const uint8_t *tab, size_t len, size_t *i)
{
	uint32_t v = 0;
	int shift = 0;

	while (*i < len) {
		uint8_t b = tab[(*i)++];
		if (shift < 30)
			v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int64_t svarint(const uint8_t *tab, size_t len, size_t *i)
{
	uint32_t v = varint(tab, len, i);

	return (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

/* 3.11+ location table: entries of (1 header byte: 1, 4-bit code, 3-bit length-1 in code
 * units) + payload; codes 0-9 short form, 10-12 one-line form (delta = code - 10),
 * 13 no columns (svarint delta), 14 long form (svarint delta + 3 varints), 15 no location. */
static int line_311(const uint8_t *tab, size_t len, int firstlineno, int64_t index)
{
	int64_t pos = 0, line = firstlineno, delta;
	size_t i = 0;

	while (i < len) {
		uint8_t b = tab[i++];
		int code = (b >> 3) & 15, n_units = (b & 7) + 1;

		if (code == 15) {
			delta = 0;
		} else if (code == 14) {
			delta = svarint(tab, len, &i);
			varint(tab, len, &i);
			varint(tab, len, &i);
			varint(tab, len, &i);
		} else if (code == 13) {
			delta = svarint(tab, len, &i);
		} else if (code >= 10) {
			delta = code - 10;
			i += 2;
		} else {
			delta = 0;
			i += 1;
		}
		line += delta;
		if (index >= pos && index < pos + n_units)
			return code == 15 ? -1 : line_result(line);
		pos += n_units;
	}
	return -1;
}

int rec_py_line(int line_format, const uint8_t *tab, size_t len, int firstlineno, int64_t index)
{
	if (index < 0)
		return firstlineno;
	if (!tab || index > INT64_MAX / 2)
		return -1;
	return line_format == REC_PY_LINES_310 ? line_310(tab, len, firstlineno, index)
	                                       : line_311(tab, len, firstlineno, index);
}

/* ---- the structure reader ---- */

static uint64_t rd64(const uint8_t *buf, int32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, 8);
	return v;
}

static uint32_t rd32(const uint8_t *buf, int32_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, 4);
	return v;
}

/* The largest of offs (-1: a field the version lacks); an offset below -1 gives a length no
 * buffer holds, so the read is refused rather than indexing before the buffer. */
static int32_t max_off(const int32_t *offs, size_t n)
{
	int32_t m = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (offs[i] < -1)
			return INT32_MAX - 8;
		if (offs[i] > m)
			m = offs[i];
	}
	return m;
}

int rec_py_read_thread(rec_procmem *m, const rec_pyoff *o, uint64_t ts, rec_pythread *out)
{
	int32_t offs[] = { o->ts_next, o->ts_interp, o->ts_thread_id, o->ts_native_tid, o->ts_frame,
	                   o->ts_cframe };
	uint8_t buf[TS_BUF];
	size_t len = (size_t)max_off(offs, sizeof(offs) / sizeof(offs[0])) + 8;
	int rc;

	if (len > sizeof(buf))
		return -EINVAL;
	if ((rc = rec_procmem_read(m, ts, buf, len)) < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->addr = ts;
	out->next = rd64(buf, o->ts_next);
	out->interp = rd64(buf, o->ts_interp);
	out->thread_id = rd64(buf, o->ts_thread_id);
	if (o->ts_native_tid >= 0)
		out->native_tid = rd64(buf, o->ts_native_tid);
	if (o->ts_frame >= 0) {
		out->frame = rd64(buf, o->ts_frame);
	} else if (o->ts_cframe >= 0) {
		uint64_t cf = rd64(buf, o->ts_cframe);
		out->cframe = cf;
		if (cf && (rc = rec_procmem_read(m, cf + (uint64_t)o->cf_current_frame, &out->frame, 8)) < 0)
			return rc;
	}
	return 0;
}

int rec_py_read_frames(rec_procmem *m, const rec_pyoff *o, uint64_t frame,
                       rec_pyframe_raw *out, size_t cap, int *torn)
{
	int32_t offs[] = { o->fr_previous, o->fr_code, o->fr_instr, o->fr_is_entry, o->fr_owner,
	                   o->fr_lasti };
	uint8_t buf[FR_BUF];
	size_t len = (size_t)max_off(offs, sizeof(offs) / sizeof(offs[0])) + 8, n = 0, steps = 0;
	uint64_t prev_addr = 0;
	rec_procmem_walk w;
	int rc = 0;

	*torn = 0;
	if (len > sizeof(buf))
		return -EINVAL;
	/* the frames are looked at in place in the pass's snapshot (a walk), not copied out one
	 * by one: most of a pass's reads are these */
	rec_procmem_walk_begin(&w);
	while (frame) {
		uint64_t code;
		rec_pyframe_raw *f;
		const uint8_t *fb;

		if (n >= cap || steps++ >= 4 * REC_PY_MAX_FRAMES || frame == prev_addr || (frame & 7)) {
			*torn = 1;
			break;
		}
		if (!(fb = rec_procmem_walk_read(m, &w, frame, buf, len, &rc))) {
			if (n == 0 && steps == 1)
				goto out;
			*torn = 1;
			break;
		}
		prev_addr = frame;
		frame = rd64(fb, o->fr_previous);
		if (o->fr_owner >= 0 && fb[o->fr_owner] == FRAME_OWNED_BY_CSTACK) {
			if (n > 0)
				out[n - 1].flags |= GTT_PYFRAME_ENTRY;
			continue;
		}
		code = rd64(fb, o->fr_code);
		if (!code || (code & 7)) {
			*torn = 1;
			break;
		}
		f = &out[n++];
		f->addr = prev_addr;
		f->code = code;
		f->flags = 0;
		f->slot = UINT32_MAX;
		if (o->frame_kind == REC_PY_FRAMEOBJ) {
			/* every 3.10 frame is its own _PyEval_EvalFrameDefault call */
			f->index = (int32_t)rd32(fb, o->fr_lasti);
			f->flags |= GTT_PYFRAME_ENTRY;
		} else {
			uint64_t instr = rd64(fb, o->fr_instr);
			uint64_t start = code + (uint64_t)o->co_code_adaptive;
			int64_t idx = (int64_t)(instr - start) / 2;
			/* prev_instr sits one code unit before the first on a fresh frame */
			f->index = idx < -1 || idx > (1 << 26) ? -1 : idx;
			if (o->fr_is_entry >= 0 && fb[o->fr_is_entry])
				f->flags |= GTT_PYFRAME_ENTRY;
		}
	}
	rc = (int)n;
out:
	rec_procmem_walk_end(m, &w);
	return rc;
}

uint64_t rec_py_gil_addr(rec_procmem *m, const rec_pyoff *o, uint64_t runtime)
{
	uint64_t interp = 0, gil = 0;

	if (o->rt_gil >= 0)
		return runtime + (uint64_t)o->rt_gil;
	/* interpreters.main follows interpreters.head in every supported version */
	if (rec_procmem_read(m, runtime + (uint64_t)o->rt_interp_head + 8, &interp, 8) < 0 || !interp)
		return 0;
	if (rec_procmem_read(m, interp + (uint64_t)o->is_gil_ptr, &gil, 8) < 0)
		return 0;
	return gil;
}

int rec_py_read_gil(rec_procmem *m, const rec_pyoff *o, uint64_t gil, rec_pygil *out)
{
	int32_t offs[] = { o->gil_holder, o->gil_locked, o->gil_switches };
	uint8_t buf[GIL_BUF];
	size_t len = (size_t)max_off(offs, 3) + 8;
	int rc;

	if (len > sizeof(buf))
		return -EINVAL;
	if ((rc = rec_procmem_read(m, gil, buf, len)) < 0)
		return rc;
	out->holder = rd64(buf, o->gil_holder);
	out->locked = (int32_t)rd32(buf, o->gil_locked);
	out->switches = o->gil_switches >= 0 ? rd64(buf, o->gil_switches) : 0;
	return 0;
}

/* Append code point c as UTF-8 to buf[*n..cap-1); 0 when it does not fit. */
static int put_utf8(char *buf, size_t cap, size_t *n, uint32_t c)
{
	char tmp[4];
	size_t k;

	if (c < 0x80) {
		tmp[0] = (char)c;
		k = 1;
	} else if (c < 0x800) {
		tmp[0] = (char)(0xc0 | c >> 6);
		tmp[1] = (char)(0x80 | (c & 63));
		k = 2;
	} else if (c < 0x10000) {
		tmp[0] = (char)(0xe0 | c >> 12);
		tmp[1] = (char)(0x80 | ((c >> 6) & 63));
		tmp[2] = (char)(0x80 | (c & 63));
		k = 3;
	} else {
		if (c > 0x10ffff)
			c = 0xfffd;
		tmp[0] = (char)(0xf0 | c >> 18);
		tmp[1] = (char)(0x80 | ((c >> 12) & 63));
		tmp[2] = (char)(0x80 | ((c >> 6) & 63));
		tmp[3] = (char)(0x80 | (c & 63));
		k = 4;
	}
	if (*n + k >= cap)
		return 0;
	memcpy(buf + *n, tmp, k);
	*n += k;
	return 1;
}

#define STR_INLINE 96 /* characters read together with the header */

int rec_py_read_str(rec_procmem *m, const rec_pyoff *o, uint64_t addr, char *buf, size_t cap)
{
	uint8_t head[STR_HEAD + STR_INLINE * 4];
	uint8_t *data = NULL;
	const uint8_t *chars;
	/* PyASCIIObject is the smallest str header: read it with a short string's characters in
	 * one go; an object near the end of a mapping makes that fail, so retry with the header */
	size_t head_len = (size_t)o->str_ascii_size, got, n = 0, i, want, data_off, bytes;
	uint64_t length;
	uint32_t state;
	int kind, rc;

	/* the offsets may come from the target: everything read from head must lie in the
	 * header read (head_len bytes), and the header in head */
	if (cap == 0 || o->str_ascii_size < 0 || o->str_compact_size < o->str_ascii_size ||
	    (size_t)o->str_compact_size + 8 > STR_HEAD || o->str_length < 0 || o->str_state < 0 ||
	    (size_t)o->str_length + 8 > head_len || (size_t)o->str_state + 4 > head_len)
		return -EINVAL;
	buf[0] = 0;
	got = head_len + STR_INLINE;
	if (rec_procmem_read(m, addr, head, got) < 0) {
		got = head_len;
		if ((rc = rec_procmem_read(m, addr, head, got)) < 0)
			return rc;
	}
	length = rd64(head, o->str_length);
	state = rd32(head, o->str_state);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4) || length > (1u << 20))
		return -EINVAL; /* not a compact str */
	if (state & (1u << 6)) {
		data_off = (size_t)o->str_ascii_size;
		kind = 1;
	} else {
		data_off = (size_t)o->str_compact_size;
	}
	want = length < cap ? (size_t)length : cap - 1;
	bytes = want * (size_t)kind;
	if (data_off + bytes <= got) {
		chars = head + data_off;
	} else if (data_off + bytes <= sizeof(head)) {
		if ((rc = rec_procmem_read(m, addr + data_off, head + data_off, bytes)) < 0)
			return rc;
		chars = head + data_off;
	} else {
		data = malloc(bytes + 1);
		rc = -ENOMEM;
		if (!data || (rc = rec_procmem_read(m, addr + data_off, data, bytes)) < 0)
			goto out;
		chars = data;
	}
	for (i = 0; i < want; i++) {
		uint32_t c = kind == 1 ? chars[i] : kind == 2 ? (uint32_t)(chars[2 * i] | chars[2 * i + 1] << 8)
		                                              : rd32(chars, (int32_t)(4 * i));
		if (!put_utf8(buf, cap, &n, c))
			break;
	}
	buf[n] = 0;
	rc = (int)n;
out:
	free(data);
	return rc;
}

void rec_pycode_clear(rec_pycode *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->qualname);
	free(c->filename);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}

/* Read the code object's header fields into buf. 0 or -errno. */
static int read_code_head(rec_procmem *m, const rec_pyoff *o, uint64_t addr, uint8_t *buf, size_t cap)
{
	int32_t offs[] = { o->ob_type, o->co_filename, o->co_name, o->co_qualname, o->co_firstlineno,
	                   o->co_linetable };
	size_t len = (size_t)max_off(offs, sizeof(offs) / sizeof(offs[0])) + 8;

	if (len > cap)
		return -EINVAL;
	return rec_procmem_read(m, addr, buf, len);
}

static char *read_str_dup(rec_procmem *m, const rec_pyoff *o, uint64_t addr)
{
	char tmp[STR_DUP_MAX];

	if (!addr || rec_py_read_str(m, o, addr, tmp, sizeof(tmp)) < 0)
		return NULL;
	return strdup(tmp);
}

int rec_py_read_code(rec_procmem *m, const rec_pyoff *o, uint64_t addr, uint64_t type_addr,
                     rec_pycode *out)
{
	uint8_t head[CODE_BUF], bhead[BYTES_HEAD];
	uint64_t lt, lt_len;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = read_code_head(m, o, addr, head, sizeof(head))) < 0)
		return rc;
	if (type_addr && rd64(head, o->ob_type) != type_addr)
		return -EINVAL; /* not a code object */
	out->name_ptr = rd64(head, o->co_name);
	out->filename_ptr = rd64(head, o->co_filename);
	out->firstlineno = (int32_t)rd32(head, o->co_firstlineno);
	out->name = read_str_dup(m, o, out->name_ptr);
	out->filename = read_str_dup(m, o, out->filename_ptr);
	if (!out->name || !out->filename)
		goto fail;
	if (o->co_qualname >= 0)
		out->qualname = read_str_dup(m, o, rd64(head, o->co_qualname));
	if (!out->qualname)
		out->qualname = strdup(out->name);
	if (o->co_code_adaptive >= 0)
		out->code_start = addr + (uint64_t)o->co_code_adaptive;
	/* the line table is a bytes object; a missing one only costs the line numbers */
	lt = rd64(head, o->co_linetable);
	/* bhead holds the bytes header up to ob_sval: ob_size must lie inside what is read */
	if (lt && o->bytes_size >= 0 && (size_t)o->bytes_sval <= sizeof(bhead) &&
	    (int64_t)o->bytes_size + 8 <= o->bytes_sval &&
	    rec_procmem_read(m, lt, bhead, (size_t)o->bytes_sval) == 0) {
		lt_len = rd64(bhead, o->bytes_size);
		if (lt_len > REC_PY_LINETABLE_MAX) {
			out->linetable_refused = 1;
		} else if (lt_len > 0) {
			out->linetable = malloc(lt_len);
			if (out->linetable &&
			    rec_procmem_read(m, lt + (uint64_t)o->bytes_sval, out->linetable, lt_len) == 0) {
				out->linetable_len = lt_len;
			} else {
				free(out->linetable);
				out->linetable = NULL;
			}
		}
	}
	if (!out->qualname)
		goto fail;
	return 0;
fail:
	/* a name that is not a readable str: a torn or freed object */
	rec_pycode_clear(out);
	return -EFAULT;
}

/* The prefetch's requests: n at most cap. */
typedef struct pf_list {
	uint64_t *addr;
	size_t *len, n, cap;
} pf_list;

static void pf_add(pf_list *l, uint64_t addr, size_t len)
{
	if (addr && len && l->n < l->cap) {
		l->addr[l->n] = addr;
		l->len[l->n++] = len;
	}
}

/* Stage 3 for the str at addr whose header (with STR_INLINE characters) was prefetched: its
 * characters when rec_py_read_str() will read them apart (the same arithmetic). */
static void pf_str_rest(rec_procmem *m, const rec_pyoff *o, uint64_t addr, pf_list *l)
{
	uint8_t head[STR_HEAD + STR_INLINE * 4];
	size_t head_len = (size_t)o->str_ascii_size, got = head_len + STR_INLINE, data_off, want;
	uint64_t length;
	uint32_t state;
	int kind;

	if (!addr || o->str_ascii_size < 0 || (size_t)o->str_length + 8 > head_len ||
	    (size_t)o->str_state + 4 > head_len || rec_procmem_read(m, addr, head, got) < 0)
		return;
	length = rd64(head, o->str_length);
	state = rd32(head, o->str_state);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4) || length > (1u << 20))
		return;
	data_off = (size_t)((state & (1u << 6)) ? o->str_ascii_size : o->str_compact_size);
	kind = (state & (1u << 6)) ? 1 : kind;
	want = length < STR_DUP_MAX ? (size_t)length : STR_DUP_MAX - 1;
	if (data_off + want * (size_t)kind > got)
		pf_add(l, addr + data_off, want * (size_t)kind);
}

int rec_py_codes_prefetch(rec_procmem *m, const rec_pyoff *o, const uint64_t *addrs, size_t n,
                          uint64_t type_addr)
{
	size_t head_len = rec_py_code_head_len(o), i, str_len = (size_t)o->str_ascii_size + STR_INLINE;
	int32_t str_offs[3] = { o->co_name, o->co_filename, o->co_qualname };
	pf_list l = { NULL, NULL, 0, 5 * n };
	uint8_t head[CODE_BUF], bhead[BYTES_HEAD];
	int rc = -ENOMEM, k, lt_ok;

	if (!n)
		return 0;
	if (!head_len || o->str_ascii_size < 0)
		return -EINVAL;
	lt_ok = o->bytes_size >= 0 && (size_t)o->bytes_sval <= sizeof(bhead) && (int64_t)o->bytes_size + 8 <= o->bytes_sval;
	l.addr = malloc(l.cap * sizeof(*l.addr));
	l.len = malloc(l.cap * sizeof(*l.len));
	if (!l.addr || !l.len)
		goto out;
	/* 1: the headers (read_code_head's length is head_len) */
	for (i = 0; i < n; i++)
		pf_add(&l, addrs[i], head_len);
	if ((rc = rec_procmem_prefetch(m, l.addr, l.len, l.n)) < 0)
		goto out;
	/* 2: the strings with STR_INLINE characters, the line tables' bytes headers */
	l.n = 0;
	for (i = 0; i < n; i++) {
		if (rec_procmem_read(m, addrs[i], head, head_len) < 0 || (type_addr && rd64(head, o->ob_type) != type_addr))
			continue;
		for (k = 0; k < 3; k++)
			if (str_offs[k] >= 0)
				pf_add(&l, rd64(head, str_offs[k]), str_len);
		if (lt_ok)
			pf_add(&l, rd64(head, o->co_linetable), (size_t)o->bytes_sval);
	}
	if ((rc = rec_procmem_prefetch(m, l.addr, l.len, l.n)) < 0)
		goto out;
	/* 3: what those headers say is left: long strings, the line tables */
	l.n = 0;
	for (i = 0; i < n; i++) {
		uint64_t lt, lt_len;
		if (rec_procmem_read(m, addrs[i], head, head_len) < 0 || (type_addr && rd64(head, o->ob_type) != type_addr))
			continue;
		for (k = 0; k < 3; k++)
			if (str_offs[k] >= 0)
				pf_str_rest(m, o, rd64(head, str_offs[k]), &l);
		lt = rd64(head, o->co_linetable);
		if (lt_ok && lt && rec_procmem_read(m, lt, bhead, (size_t)o->bytes_sval) == 0) {
			lt_len = rd64(bhead, o->bytes_size);
			if (lt_len > 0 && lt_len <= REC_PY_LINETABLE_MAX)
				pf_add(&l, lt + (uint64_t)o->bytes_sval, (size_t)lt_len);
		}
	}
	rc = rec_procmem_prefetch(m, l.addr, l.len, l.n);
	if (rc > 0)
		rc = 0;
out:
	free(l.addr);
	free(l.len);
	return rc;
}

size_t rec_py_code_head_len(const rec_pyoff *o)
{
	int32_t offs[] = { o->ob_type, o->co_filename, o->co_name, o->co_qualname, o->co_firstlineno,
	                   o->co_linetable };
	size_t len = (size_t)max_off(offs, sizeof(offs) / sizeof(offs[0])) + 8;

	return len > CODE_BUF ? 0 : len;
}

int rec_py_code_head_same(const rec_pyoff *o, const uint8_t *head, const rec_pycode *c)
{
	return rd64(head, o->co_name) == c->name_ptr && rd64(head, o->co_filename) == c->filename_ptr &&
	       (int32_t)rd32(head, o->co_firstlineno) == c->firstlineno;
}

int rec_py_code_same(rec_procmem *m, const rec_pyoff *o, uint64_t addr, const rec_pycode *c)
{
	int8_t same;
	int rc;

	if ((rc = rec_py_codes_same(m, o, &addr, &c, &same, 1)) < 0)
		return rc;
	return same < 0 ? -EFAULT : same;
}

int rec_py_codes_same(rec_procmem *m, const rec_pyoff *o, const uint64_t *addrs,
                      const rec_pycode *const *cs, int8_t *same, size_t n)
{
	size_t len = rec_py_code_head_len(o), i;
	uint8_t buf[REC_PY_CHECK_BATCH][CODE_BUF];
	rec_procmem_req req[REC_PY_CHECK_BATCH];
	int rc;

	if (n > REC_PY_CHECK_BATCH || len == 0)
		return -EINVAL;
	for (i = 0; i < n; i++)
		req[i] = (rec_procmem_req){ addrs[i], buf[i], len, 0 };
	if (n && (rc = rec_procmem_readv(m, req, n)) < 0)
		return rc;
	for (i = 0; i < n; i++) {
		if (!req[i].ok)
			same[i] = -1;
		else
			same[i] = (int8_t)rec_py_code_head_same(o, buf[i], cs[i]);
	}
	return 0;
}

/* dwfl_priv.h — what analyze/dwfl.c, dwfl_files.c, dwfl_sym.c and dwfl_unwind.c share: the
 * symbolizer's state, binaries ("files"), mapped modules and address spaces. Not for use
 * outside them.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_DWFL_PRIV_H
#define ANA_DWFL_PRIV_H

#include <elfutils/libdwfl.h>
#include <stdint.h>
#include "dwfl.h"
#include "ksym.h"
#include "model_priv.h"

enum { SRC_NONE = 0, SRC_ARCHIVE, SRC_SYMFS, SRC_DEBUGDIR, SRC_PATH };
#define MAX_SEGS 16
#define MAX_UNWIND 1024
#define MAX_INLINE 32
#define PERF_REGS_ABI_64 2
/* At most this many words of unwinds kept by ana_sym_collect (16 MiB); a sample unwound when
 * the cache is full is unwound again by ana_sym_sample. */
#define UWC_MAX_WORDS (2u << 20)

typedef struct load_seg { uint64_t vaddr, offset, filesz, memsz; uint32_t flags; } load_seg;

typedef struct sym_archive {
	uint8_t build_id[GTT_BUILD_ID_MAX];
	uint32_t build_id_len;
	char *path;
	uint8_t *data;
	size_t len;
} sym_archive;

typedef struct sym_file {
	uint8_t build_id[GTT_BUILD_ID_MAX];
	uint32_t build_id_len;
	const char *path;      /* as recorded without " (deleted)"; model-interned */
	const char *module;    /* basename; model-interned */
	uint32_t id;
	int resolved, source;
	int memfd;             /* archive image, -1 otherwise */
	char *open_path;       /* file to open for the Dwfl (NULL for archive or none) */
	int et_exec;
	load_seg segs[MAX_SEGS];
	size_t n_segs;
	int hit, hit_missing;
	char *why;             /* why no binary was found */
	int fde_loaded;
	uint64_t *fde_starts;  /* function starts from .eh_frame_hdr, for symbol-less addresses */
	size_t n_fde;
	/* The file's own Dwfl for symbols and DWARF (dwfl_sym.c), one module at bias 0, open
	 * only while its addresses are symbolized: the address spaces' Dwfls unwind and never
	 * load a separate debug file's DWARF. */
	Dwfl *sym_dwfl;
	Dwfl_Module *sym_dm;   /* NULL when the file could not be reported */
	int sym_failed;        /* it could not: not tried again */
	int debug_frame;       /* 0 not asked; -1: its debug file found by build-id has no .debug_frame
	                          (the spaces' Dwfls get no debug file); 1 otherwise */
	struct ana_sym *sym;
} sym_file;

typedef struct sym_mod {
	uint64_t start, end, pgoff;   /* one executable mapping */
	uint64_t bias;
	sym_file *file;
	Dwfl_Module *dm;              /* NULL when the file has no usable ELF */
	uint32_t order;               /* recording order among the image's mappings */
} sym_mod;

/* What complete stacks showed above one of the image's thread entry functions (start_thread,
 * __libc_start_call_main): the callers of the entry. An entry runs once at the bottom of its
 * thread, called from one place, so its callers are the same for every sample that passes
 * through it, whichever call inside it is active (main or exit); stitched stacks that end in
 * it are completed with them. */
#define MAX_ROOT_TAIL 8
typedef struct root_tail {
	const char *entry_name;       /* the entry function, by its model-interned name and module */
	const char *entry_module;     /* (not a frame id: a function's frames differ by line) */
	uint32_t n;                   /* callers, innermost first (return addresses) */
	uint8_t conflict;             /* two complete stacks disagreed: never used */
	uint64_t callers[MAX_ROOT_TAIL];
} root_tail;

/* What the CFI says at one code address (dwfl_unwind.c's per-space cache: the same few
 * addresses end or continue most stacks, and a CFI lookup costs thousands of instructions). */
#define CFI_CACHE 256
typedef struct cfi_fact {
	uint64_t pc;                  /* + 1; 0 empty */
	uint8_t has_row, no_caller, fp_frame;
} cfi_fact;

/* The user frames of one sample, leaf first, as the unwinder found them. */
typedef struct uw_state {
	size_t n;
	uint64_t raw[MAX_UNWIND];     /* the sampled instruction, then return addresses */
	uint8_t exact[MAX_UNWIND];    /* 1: look raw up as is (leaf, signal frame); 0: raw - 1 (the call) */
	int stop;                     /* enum ana_unwind */
	size_t n_dwarf;               /* frames [0, n_dwarf) came from DWARF, the rest from the FP callchain */
	int stitched;
	/* while unwinding: a memory read since the last frame failed above the stack copy / elsewhere */
	int read_beyond, read_bad;
	uint64_t last_rbp;            /* rbp in the last DWARF frame, when last_rbp_ok */
	int last_rbp_ok;
} uw_state;

typedef struct sym_space {
	uint32_t pid;
	uint32_t gen;                 /* image of the pid: number of execs before */
	uint32_t id;                  /* index in the symbolizer's spaces + 1 */
	struct ana_sym *sym;
	Dwfl *dwfl;
	int attach;                   /* 0 not tried, 1 attached, -1 failed */
	sym_mod *mods;                /* sorted by start, non-overlapping */
	size_t n_mods;
	const gtt_sample *cur;        /* the sample being unwound */
	uint64_t cur_sp;
	uw_state *uw;                 /* its frames */
	ANA_VEC(root_tail) roots;     /* learnt from complete stacks of this image */
	cfi_fact *cfi;                /* CFI_CACHE entries, allocated at first use */
} sym_space;

typedef struct addr_ent {
	uint64_t rel;
	uint32_t file_id;
	uint32_t off, n;              /* frame ids in pool[off..off+n), leaf first */
} addr_ent;

/* One frame of a user address as symbolization found it, before it is interned (module and
 * kind come from the file): strings model-interned. */
typedef struct sym_desc {
	const char *name, *file;
	int32_t line;
	uint8_t inlined;
} sym_desc;

/* An address noted by ana_sym_collect, symbolized by ana_sym_prepare with the other
 * addresses of its file: descs[off..off+n), leaf first, once done. */
typedef struct pre_ent {
	uint64_t rel;
	uint32_t file_id;
	uint32_t off, n;
	uint8_t done;
} pre_ent;

struct ana_sym {
	ana_model *m;
	ana_sym_opts o;
	char *debuginfo_path;
	Dwfl_Callbacks cb;            /* the files' Dwfls (symbols, DWARF) */
	Dwfl_Callbacks space_cb;      /* the address spaces' Dwfls (unwinding: a debug file only for .debug_frame) */
	ANA_VEC(sym_archive) archives;
	ANA_VEC(sym_file *) files;
	ana_idtable file_table;
	ANA_VEC(sym_space *) spaces;
	ana_idtable space_table;
	ANA_VEC(addr_ent) addrs;
	ana_idtable addr_table;
	ANA_VEC(uint32_t) pool;
	ANA_VEC(pre_ent) pres;        /* addresses noted ahead (dwfl_sym.c) */
	ana_idtable pre_table;
	ANA_VEC(sym_desc) descs;
	size_t n_pre_pending;         /* pres not yet symbolized */
	ANA_VEC(uint64_t) uwc;        /* unwinds kept by ana_sym_collect (dwfl.c's uwc_keep) */
	ANA_VEC(size_t) uw_ents;      /* where each starts in uwc */
	ana_idtable uwc_table;
	uint32_t *map_order;          /* mapping indices sorted by (pid, time) */
	uint64_t *execs;              /* exec events sorted by (pid, time): [2i] pid, [2i+1] time */
	size_t n_execs;
	uint32_t last_pid, last_space;   /* ana_sym_space_id's memo (no execs only) */
	ana_ksym *ksym;
	int ksym_tried;               /* kernel symbols are read at the first kernel frame */
	uint32_t kernel_frame, unknown_frame;
	ANA_VEC(char *) missing;
	int missing_built;
	ana_sym_stats st;
	uw_state uw;
	uint32_t leaf_first[MAX_UNWIND * 2];
};

/* The module holding a runtime address of the space, or NULL. */
const sym_mod *ana_sym_mod_find(const sym_space *sp, uint64_t addr);

/* ---- dwfl_unwind.c ---- */
/* Lookup address of frame i (the call instruction for a return address). */
static inline uint64_t uw_pc(const uw_state *u, size_t i)
{
	return u->exact[i] || u->raw[i] == 0 ? u->raw[i] : u->raw[i] - 1;
}
/* Unwind the sample's registers and stack copy into u (u->n frames, u->stop why it ended:
 * ANA_UNWIND_ROOT only when the last frame's CFI says it has no caller). */
void ana_uw_dwarf(ana_sym *s, sym_space *sp, const gtt_sample *smp, uw_state *u);
/* Continue a truncated DWARF unwind with the sample's frame-pointer callchain, where the two
 * agree: 1 when frames were added (u->stitched), else 0 and u unchanged. */
int ana_uw_stitch(sym_space *sp, const gtt_sample *smp, uw_state *u);
/* The sampled instruction from the registers; 0 or -1. */
int ana_uw_sample_ip(const gtt_sample *smp, uint64_t *ip);
/* Remember the callers above frame k of a complete unwind, in entry function entry (a frame of
 * it: any line). 0 or GTT_ENOMEM. */
int ana_uw_root_learn(sym_space *sp, const uw_state *u, size_t k, const ana_frame *entry);
/* Append the callers remembered for entry function entry (a frame of it), which the outermost
 * frame is in: 1 when known. */
int ana_uw_root_complete(const sym_space *sp, uw_state *u, const ana_frame *entry);

/* ---- dwfl_sym.c ---- */
/* Frames of user address pc in module md (link-time address rel), leaf first, from the
 * addresses ana_sym_prepare symbolized or else symbolized now, into out[0..cap) (cap >=
 * MAX_INLINE + 1): the count (>= 1), or -1 on ENOMEM. */
int ana_symd_describe(ana_sym *s, const sym_mod *md, uint64_t pc, uint64_t rel, sym_desc *out, int cap);
/* Note the user address pc of space sp for ana_sym_prepare. 0 or GTT_ENOMEM. */
int ana_symd_note(ana_sym *s, const sym_space *sp, uint64_t pc);
/* Close the files' Dwfls and free the noted addresses. */
void ana_symd_free(ana_sym *s);
/* find_debuginfo for the files' Dwfls: the standard search, but for an embedded copy only a
 * debug file found by build-id. */
int ana_symd_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                            const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                            char **debuginfo_file_name);
/* find_debuginfo for the spaces' Dwfls (module userdata: the sym_file): no separate debug file
 * where the one found by build-id has no .debug_frame (CFI the unwinder may need), so that
 * unwinding does not inflate a debug file's DWARF; else as ana_symd_find_debuginfo. */
int ana_symd_find_debuginfo_cfi(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name);
/* The module file name of an embedded copy is this prefix + its path (see find_debuginfo). */
#define ARCHIVE_NAME_PREFIX "gt-archive:"

/* The file of a mapping (by build-id, else path), created on first use, not yet resolved.
 * NULL on ENOMEM. */
sym_file *ana_symf_get(ana_sym *s, const gtt_mapping *mp);
/* Find the binary: archive, --symfs, original path, debug directory; sets source, memfd or
 * open_path and the segments, or why. */
void ana_symf_resolve(ana_sym *s, sym_file *f);
/* Load bias of a mapping [start, ...) of file offset pgoff. 0 or -1. */
int ana_symf_bias(const sym_file *f, uint64_t start, uint64_t pgoff, uint64_t *bias);
/* Bytes [vaddr, vaddr + need) of an ELF's allocated sections (link-time address), or NULL. */
const uint8_t *ana_symf_bytes_at(Elf *elf, uint64_t vaddr, size_t need);
/* Start of the .eh_frame_hdr entry (function) holding link-time address rel of file f, read
 * through module dm (any Dwfl's module of f), or rel. */
uint64_t ana_symf_fde_start(sym_file *f, Dwfl_Module *dm, uint64_t rel);
/* Hex text of a build-id into out (2 * len + 1 bytes). */
void ana_symf_bid_hex(const uint8_t *bid, uint32_t len, char *out);

#endif

/* dwfl_priv.h — what analyze/dwfl.c and analyze/dwfl_files.c share: the symbolizer's state,
 * binaries ("files"), mapped modules and address spaces. Not for use outside those two.
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
} sym_file;

typedef struct sym_mod {
	uint64_t start, end, pgoff;   /* one executable mapping */
	uint64_t bias;
	sym_file *file;
	Dwfl_Module *dm;              /* NULL when the file has no usable ELF */
	uint32_t order;               /* recording order among the image's mappings */
} sym_mod;

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
} sym_space;

typedef struct addr_ent {
	uint64_t rel;
	uint32_t file_id;
	uint32_t off, n;              /* frame ids in pool[off..off+n), leaf first */
} addr_ent;

struct ana_sym {
	ana_model *m;
	ana_sym_opts o;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	ANA_VEC(sym_archive) archives;
	ANA_VEC(sym_file *) files;
	ana_idtable file_table;
	ANA_VEC(sym_space *) spaces;
	ana_idtable space_table;
	ANA_VEC(addr_ent) addrs;
	ana_idtable addr_table;
	ANA_VEC(uint32_t) pool;
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
	uint64_t pcs[MAX_UNWIND];
	uint32_t leaf_first[MAX_UNWIND * 2];
};

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
/* Start of the .eh_frame_hdr entry (function) holding link-time address rel, or rel. */
uint64_t ana_symf_fde_start(const sym_mod *md, uint64_t rel);
/* Hex text of a build-id into out (2 * len + 1 bytes). */
void ana_symf_bid_hex(const uint8_t *bid, uint32_t len, char *out);

#endif

/*
 * miltext.text.mil._fastprint: serialized CoreML.Specification.MILSpec.Program bytes -> the canonical
 * text of miltext.text.mil.printer.print_program(Program.from_proto(data)), in one pass over the wire
 * format, without building the object model.
 *
 * The Python printer is the reference. This module returns None for anything it does not
 * handle exactly the same way (unknown fields, wrong wire types, repeated singular fields,
 * duplicate map keys, invalid UTF-8, non-canonical varints, tensor types with attributes,
 * unknown dtype codes, nesting deeper than MAX_DEPTH messages, output that would grow far
 * beyond the input), and the caller then takes the Python path, which gives the proper text or
 * the proper error. Failure anywhere unwinds with longjmp to program_text(); every allocation
 * of a call lives in arenas freed there.
 *
 * Tables that live in Python (dtypes, keywords, INLINE_LIMIT, the default weight file, the
 * canonical NaNs, the fp8 value tables, lexemes.quote for non-ASCII strings, op input orders)
 * are handed over by configure() and program_text()'s second argument.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define NORETURN __attribute__((noreturn))
#else
#define NORETURN
#endif

#define MAX_DEPTH 64          /* message nesting; upb itself stops near 100 */
#define MAX_NEST_DIMS 32      /* ranks a nested literal may have */

/* ---- configuration ----------------------------------------------------------------------- */

enum { K_NONE, K_FLOAT, K_INT, K_UINT, K_BOOL, K_STRING };
enum { S_NONE = 0, S_FLOATS = 1, S_INTS = 2, S_BOOLS = 3, S_STRINGS = 4, S_LONGINTS = 5,
       S_DOUBLES = 6, S_BYTES = 7 };
enum { F_NONE, F_FP16, F_BF16, F_FP32, F_FP64, F_FP8E4M3, F_FP8E5M2 };

static const char *const FIELD_NAMES[8] = {"", "floats", "ints", "bools", "strings", "longInts",
                                           "doubles", "bytes"};

typedef struct {
    int known;
    char name[32];
    size_t namelen;
    int bits, kind, storage, fmt;
    int bare_default;   /* DEFAULT_FOR_KIND[kind] == name */
    int is_fp32;
    uint64_t canonical_nan;
} DType;

static DType g_dt[256];
static const DType *g_storage_dt[8];   /* fp32, int32, bool, -, int64, fp64 for each field */
static int g_configured = 0;
static uint64_t g_inline_limit = 64;
static char *g_weight_file = NULL;
static size_t g_weight_file_len = 0;
static char *g_indent = NULL;
static size_t g_indent_len = 0;
static PyObject *g_quote = NULL;

/* fp8: value of each code (float32, from packing.FP8_TABLES) and the sorted finite values for
 * the nearest-code search packing._nearest_fp8 does. */
typedef struct {
    float value[256];
    double sorted[256];
    uint8_t codes[256];
    int nsorted;
    int pos_inf, neg_inf;       /* codes of +-inf, or -1 */
    uint8_t canonical;
    int ready;
} Fp8Table;
static Fp8Table g_fp8[2];

#define KW_SLOTS 512
static char *g_kw[KW_SLOTS];

static uint32_t fnv(const uint8_t *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    return h;
}

static int is_keyword(const uint8_t *s, size_t n) {
    uint32_t h = fnv(s, n) & (KW_SLOTS - 1);
    while (g_kw[h]) {
        if (strlen(g_kw[h]) == n && memcmp(g_kw[h], s, n) == 0) return 1;
        h = (h + 1) & (KW_SLOTS - 1);
    }
    return 0;
}

/* ---- per-call context, arenas, output ---------------------------------------------------- */

typedef struct Chunk {
    struct Chunk *prev;
    size_t size, used;
    double align_;
} Chunk;

typedef struct {
    Chunk *cur;
} Arena;

typedef struct {
    Chunk *ch;
    size_t used;
} Mark;

typedef struct {
    const char *s;
    size_t n;
    long rank;
} OrderEnt;

typedef struct {
    const uint8_t *name;
    size_t len;
    uint32_t hash;
    int used;
    OrderEnt *ents;
    size_t n;
} OrderSet;

#define ORDER_SLOTS 1024

#define LAYOUT_FILES 16

typedef struct {
    jmp_buf jb;
    int nomem;
    char *out;
    size_t len, cap, limit;
    Arena tmp, perm;
    int depth;
    PyObject *orders;
    OrderSet *oset;          /* ORDER_SLOTS entries, in perm */
    size_t nosets;
    int force_slow;          /* tests: take the bignum path for every float */
    /* blob_layout.Layout: each weight file's next offset (more files: the Python path) */
    const uint8_t *lay_file[LAYOUT_FILES];
    size_t lay_file_len[LAYOUT_FILES];
    uint64_t lay_next[LAYOUT_FILES];
    int lay_known[LAYOUT_FILES];
    int nlay;
} Ctx;

static void NORETURN fail(Ctx *c) { longjmp(c->jb, 1); }
#define FAIL(c) fail(c)

static void *arena_alloc(Ctx *c, Arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    Chunk *ch = a->cur;
    if (!ch || ch->size - ch->used < n) {
        size_t size = n > (1u << 16) ? n : (1u << 16);
        ch = (Chunk *)malloc(sizeof(Chunk) + size);
        if (!ch) {
            c->nomem = 1;
            FAIL(c);
        }
        ch->prev = a->cur;
        ch->size = size;
        ch->used = 0;
        a->cur = ch;
    }
    void *p = (char *)(ch + 1) + ch->used;
    ch->used += n;
    return p;
}

static void *zalloc(Ctx *c, size_t n) {
    void *p = arena_alloc(c, &c->tmp, n);
    memset(p, 0, n);
    return p;
}

static Mark mark(Ctx *c) {
    Mark m;
    m.ch = c->tmp.cur;
    m.used = c->tmp.cur ? c->tmp.cur->used : 0;
    return m;
}

static void release(Ctx *c, Mark m) {
    while (c->tmp.cur != m.ch) {
        Chunk *p = c->tmp.cur->prev;
        free(c->tmp.cur);
        c->tmp.cur = p;
    }
    if (c->tmp.cur) c->tmp.cur->used = m.used;
}

static void arena_free(Arena *a) {
    while (a->cur) {
        Chunk *p = a->cur->prev;
        free(a->cur);
        a->cur = p;
    }
}

typedef struct {
    void *data;
    size_t n, cap;
} Vec;

static void *vec_push(Ctx *c, Vec *v, size_t elsize) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void *d = arena_alloc(c, &c->tmp, cap * elsize);
        if (v->n) memcpy(d, v->data, v->n * elsize);
        v->data = d;
        v->cap = cap;
    }
    return (char *)v->data + (v->n++) * elsize;
}

static void grow(Ctx *c, size_t need) {
    if (c->len + need > c->limit) FAIL(c);
    size_t cap = c->cap ? c->cap : 1u << 16;
    while (cap < c->len + need) cap *= 2;
    char *p = (char *)realloc(c->out, cap);
    if (!p) {
        c->nomem = 1;
        FAIL(c);
    }
    c->out = p;
    c->cap = cap;
}

static inline void put(Ctx *c, const void *s, size_t n) {
    if (c->cap - c->len < n) grow(c, n);
    memcpy(c->out + c->len, s, n);
    c->len += n;
}

static inline void putch(Ctx *c, char ch) {
    if (c->cap == c->len) grow(c, 1);
    c->out[c->len++] = ch;
}

#define PUTS(c, lit) put((c), (lit), sizeof(lit) - 1)

static void put_u64(Ctx *c, uint64_t v) {
    char buf[24];
    int i = 24;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(c, buf + i, (size_t)(24 - i));
}

static void put_i64(Ctx *c, int64_t v) {
    if (v < 0) {
        putch(c, '-');
        put_u64(c, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(c, (uint64_t)v);
    }
}

static void put_spaces(Ctx *c, size_t n) {
    if (c->cap - c->len < n) grow(c, n);
    memset(c->out + c->len, ' ', n);
    c->len += n;
}

static void put_indent(Ctx *c, int levels) {
    for (int i = 0; i < levels; i++) put(c, g_indent, g_indent_len);
}

/* ---- wire format ------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n;
} Slice;

typedef struct {
    const uint8_t *p, *end;
} Rd;

static Rd rd_of(Slice s) {
    Rd r;
    r.p = s.p;
    r.end = s.p + s.n;
    return r;
}

static uint64_t rd_varint(Ctx *c, Rd *r) {
    uint64_t v = 0;
    unsigned shift = 0;
    for (int i = 0; i < 10; i++) {
        if (r->p >= r->end) FAIL(c);
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) FAIL(c);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (b == 0 && i > 0) FAIL(c); /* overlong */
            return v;
        }
        shift += 7;
    }
    FAIL(c);
    return 0;
}

static int rd_field(Ctx *c, Rd *r, uint32_t *field, int *wt) {
    if (r->p >= r->end) return 0;
    uint64_t tag = rd_varint(c, r);
    if (tag > 0xFFFFFFFFu || (tag >> 3) == 0) FAIL(c);
    *field = (uint32_t)(tag >> 3);
    *wt = (int)(tag & 7);
    return 1;
}

static Slice rd_ld(Ctx *c, Rd *r, int wt) {
    if (wt != 2) FAIL(c);
    uint64_t n = rd_varint(c, r);
    if (n > (uint64_t)(r->end - r->p)) FAIL(c);
    Slice s;
    s.p = r->p;
    s.n = (size_t)n;
    r->p += n;
    return s;
}

static uint64_t rd_vi(Ctx *c, Rd *r, int wt) {
    if (wt != 0) FAIL(c);
    return rd_varint(c, r);
}

static void check_utf8(Ctx *c, Slice s) {
    const uint8_t *p = s.p, *e = s.p + s.n;
    while (p < e) {
        uint8_t b = *p;
        if (b < 0x80) {
            p++;
        } else if (b >= 0xC2 && b <= 0xDF) {
            if (e - p < 2 || (p[1] & 0xC0) != 0x80) FAIL(c);
            p += 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) FAIL(c);
            if (b == 0xE0 && p[1] < 0xA0) FAIL(c);
            if (b == 0xED && p[1] >= 0xA0) FAIL(c);
            p += 3;
        } else if (b >= 0xF0 && b <= 0xF4) {
            if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
                FAIL(c);
            if (b == 0xF0 && p[1] < 0x90) FAIL(c);
            if (b == 0xF4 && p[1] >= 0x90) FAIL(c);
            p += 4;
        } else {
            FAIL(c);
        }
    }
}

static Slice rd_str(Ctx *c, Rd *r, int wt) {
    Slice s = rd_ld(c, r, wt);
    check_utf8(c, s);
    return s;
}

static void enter(Ctx *c) {
    if (++c->depth > MAX_DEPTH) FAIL(c);
}

static void leave(Ctx *c) { c->depth--; }

static int slice_eq(Slice a, const char *s) {
    size_t n = strlen(s);
    return a.n == n && memcmp(a.p, s, n) == 0;
}

static int slice_cmp(Slice a, Slice b) {
    size_t n = a.n < b.n ? a.n : b.n;
    int r = n ? memcmp(a.p, b.p, n) : 0;
    if (r) return r;
    return a.n < b.n ? -1 : a.n > b.n;
}

/* ---- parsed messages --------------------------------------------------------------------- */

enum { TY_TENSOR, TY_LIST, TY_TUPLE, TY_DICT, TY_STATE, TY_UNKNOWN };
enum { DIM_CONST, DIM_NONE, DIM_VAR, DIM_UNSET };
enum { D_NONE, D_TENSOR, D_TUPLE, D_LIST, D_DICT, D_BLOB, D_EMPTY };

typedef struct {
    int kind;
    uint64_t size;
} Dim;

typedef struct Type Type;
struct Type {
    int kind;
    const DType *dt;       /* tensor */
    size_t ndims;
    Dim *dims;
    int has_rank;          /* the proto's rank differs from len(dims) */
    int64_t rank;
    Type *a, *b;           /* list element, dict key/value, state wrapped; NULL: unset */
    int has_len;           /* list */
    Dim len;
    size_t n;              /* tuple */
    Type **items;
};

typedef struct Value Value;
typedef struct {
    Value *k, *v;
} Pair;

struct Value {
    Type *type;            /* NULL: unset */
    Slice doc;
    int dk;
    int field;             /* tensor: which TensorValue field, 0: none */
    size_t n;              /* elements / items */
    Slice raw;             /* floats, doubles: packed bytes; bytes: the bytes */
    int64_t *ints;         /* ints, longInts, bools */
    Slice *strs;
    Value **items;
    Pair *pairs;
    Slice file;
    uint64_t offset;
};

typedef struct {
    Slice name;
    Type *type;
} Var;

typedef struct {
    Slice key, val;
} Entry;

static Type *parse_type(Ctx *c, Slice s);
static Value *parse_value(Ctx *c, Slice s);

static Dim parse_dim(Ctx *c, Slice s) {
    Dim d;
    d.kind = DIM_UNSET;
    d.size = 0;
    int seen = 0;
    enter(c);
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f != 1 && f != 2) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        if (seen++) FAIL(c);
        enter(c);
        Rd q = rd_of(m);
        uint32_t f2;
        int wt2, seen2 = 0;
        uint64_t v = 0;
        while (rd_field(c, &q, &f2, &wt2)) {
            if (f2 != 1 || seen2++) FAIL(c);
            v = rd_vi(c, &q, wt2);
        }
        leave(c);
        if (f == 1) {
            d.kind = DIM_CONST;
            d.size = v;
        } else {
            if (v > 1) FAIL(c);
            d.kind = v ? DIM_VAR : DIM_NONE;
        }
    }
    leave(c);
    return d;
}

static void parse_tensor_type(Ctx *c, Slice s, Type *t) {
    enter(c);
    uint64_t code = 0, rank = 0;
    int sc = 0, sr = 0;
    Vec dims = {0};
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        switch (f) {
        case 1:
            if (sc++) FAIL(c);
            code = rd_vi(c, &r, wt);
            break;
        case 2:
            if (sr++) FAIL(c);
            rank = rd_vi(c, &r, wt);
            break;
        case 3: {
            Slice m = rd_ld(c, &r, wt);
            Dim *d = (Dim *)vec_push(c, &dims, sizeof(Dim));
            *d = parse_dim(c, m);
            break;
        }
        default: /* attributes (4) included: not handled here */
            FAIL(c);
        }
    }
    if (code > 255 || !g_dt[code].known) FAIL(c);
    t->kind = TY_TENSOR;
    t->dt = &g_dt[code];
    t->ndims = dims.n;
    t->dims = (Dim *)dims.data;
    t->rank = (int64_t)rank;
    t->has_rank = t->rank != (int64_t)dims.n;
    leave(c);
}

/* A message whose fields 1 (and 2) are optional ValueTypes or a Dimension. */
static void parse_type_fields(Ctx *c, Slice s, Type *t, int list) {
    enter(c);
    int s1 = 0, s2 = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        Slice m = rd_ld(c, &r, wt);
        if (f == 1) {
            if (s1++) FAIL(c);
            t->a = parse_type(c, m);
        } else if (f == 2 && t->kind != TY_STATE) {
            if (s2++) FAIL(c);
            if (list) {
                t->has_len = 1;
                t->len = parse_dim(c, m);
            } else {
                t->b = parse_type(c, m);
            }
        } else {
            FAIL(c);
        }
    }
    leave(c);
}

static Type *parse_type(Ctx *c, Slice s) {
    enter(c);
    Type *t = (Type *)zalloc(c, sizeof(Type));
    t->kind = TY_UNKNOWN;
    int seen = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f < 1 || f > 5) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        if (seen++) FAIL(c);
        switch (f) {
        case 1:
            parse_tensor_type(c, m, t);
            break;
        case 2:
            t->kind = TY_LIST;
            parse_type_fields(c, m, t, 1);
            break;
        case 3: {
            t->kind = TY_TUPLE;
            Vec items = {0};
            enter(c);
            Rd q = rd_of(m);
            uint32_t f2;
            int wt2;
            while (rd_field(c, &q, &f2, &wt2)) {
                if (f2 != 1) FAIL(c);
                Slice e = rd_ld(c, &q, wt2);
                Type **slot = (Type **)vec_push(c, &items, sizeof(Type *));
                *slot = parse_type(c, e);
            }
            leave(c);
            t->n = items.n;
            t->items = (Type **)items.data;
            break;
        }
        case 4:
            t->kind = TY_DICT;
            parse_type_fields(c, m, t, 0);
            break;
        case 5:
            t->kind = TY_STATE;
            parse_type_fields(c, m, t, 0);
            break;
        }
    }
    leave(c);
    return t;
}

/* Packed varints of ints (int32), longInts (int64) or bools. */
static void parse_packed_varints(Ctx *c, Slice s, Value *v, int field) {
    size_t n = 0;
    for (size_t i = 0; i < s.n; i++)
        if (!(s.p[i] & 0x80)) n++;
    if (s.n && (s.p[s.n - 1] & 0x80)) FAIL(c);
    int64_t *out = (int64_t *)arena_alloc(c, &c->tmp, (n ? n : 1) * sizeof(int64_t));
    Rd r = rd_of(s);
    for (size_t i = 0; i < n; i++) {
        uint64_t x = rd_varint(c, &r);
        int64_t y = (int64_t)x;
        if (field == S_INTS && (y < INT32_MIN || y > INT32_MAX)) FAIL(c);
        if (field == S_BOOLS && x > 1) FAIL(c);
        out[i] = y;
    }
    if (r.p != r.end) FAIL(c);
    v->ints = out;
    v->n = n;
}

static void parse_tensor_value(Ctx *c, Slice s, Value *v) {
    enter(c);
    v->dk = D_TENSOR;
    v->field = S_NONE;
    int seen = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f < 1 || f > 7) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        if (seen++) FAIL(c);
        v->field = (int)f;
        enter(c);
        Rd q = rd_of(m);
        uint32_t f2;
        int wt2, seen2 = 0;
        if (f == S_STRINGS) {
            Vec strs = {0};
            while (rd_field(c, &q, &f2, &wt2)) {
                if (f2 != 1) FAIL(c);
                Slice *x = (Slice *)vec_push(c, &strs, sizeof(Slice));
                *x = rd_str(c, &q, wt2);
            }
            v->n = strs.n;
            v->strs = (Slice *)strs.data;
        } else {
            Slice payload = {m.p, 0};
            while (rd_field(c, &q, &f2, &wt2)) {
                if (f2 != 1 || seen2++) FAIL(c);
                payload = rd_ld(c, &q, wt2);
            }
            v->raw = payload;
            switch (f) {
            case S_FLOATS:
                if (payload.n % 4) FAIL(c);
                v->n = payload.n / 4;
                break;
            case S_DOUBLES:
                if (payload.n % 8) FAIL(c);
                v->n = payload.n / 8;
                break;
            case S_BYTES:
                v->n = payload.n;
                break;
            default:
                parse_packed_varints(c, payload, v, (int)f);
            }
        }
        leave(c);
    }
    leave(c);
}

static void parse_values_list(Ctx *c, Slice s, Value *v) {
    enter(c);
    Vec items = {0};
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f != 1) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        Value **slot = (Value **)vec_push(c, &items, sizeof(Value *));
        *slot = parse_value(c, m);
    }
    v->n = items.n;
    v->items = (Value **)items.data;
    leave(c);
}

static void parse_dict_value(Ctx *c, Slice s, Value *v) {
    enter(c);
    Vec pairs = {0};
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f != 1) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        Pair *p = (Pair *)vec_push(c, &pairs, sizeof(Pair));
        p->k = p->v = NULL;
        enter(c);
        Rd q = rd_of(m);
        uint32_t f2;
        int wt2;
        while (rd_field(c, &q, &f2, &wt2)) {
            if (f2 != 1 && f2 != 2) FAIL(c);
            Slice e = rd_ld(c, &q, wt2);
            if (f2 == 1) {
                if (p->k) FAIL(c);
                p->k = parse_value(c, e);
            } else {
                if (p->v) FAIL(c);
                p->v = parse_value(c, e);
            }
        }
        leave(c);
    }
    v->n = pairs.n;
    v->pairs = (Pair *)pairs.data;
    leave(c);
}

static void parse_immediate(Ctx *c, Slice s, Value *v) {
    enter(c);
    v->dk = D_EMPTY;
    int seen = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f < 1 || f > 4) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        if (seen++) FAIL(c);
        switch (f) {
        case 1:
            parse_tensor_value(c, m, v);
            break;
        case 2:
            v->dk = D_TUPLE;
            parse_values_list(c, m, v);
            break;
        case 3:
            v->dk = D_LIST;
            parse_values_list(c, m, v);
            break;
        case 4:
            v->dk = D_DICT;
            parse_dict_value(c, m, v);
            break;
        }
    }
    leave(c);
}

static void parse_blob(Ctx *c, Slice s, Value *v) {
    enter(c);
    v->dk = D_BLOB;
    v->file.p = s.p;
    v->file.n = 0;
    v->offset = 0;
    int s1 = 0, s2 = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f == 1) {
            if (s1++) FAIL(c);
            v->file = rd_str(c, &r, wt);
        } else if (f == 2) {
            if (s2++) FAIL(c);
            v->offset = rd_vi(c, &r, wt);
        } else {
            FAIL(c);
        }
    }
    leave(c);
}

static Value *parse_value(Ctx *c, Slice s) {
    enter(c);
    Value *v = (Value *)zalloc(c, sizeof(Value));
    v->dk = D_NONE;
    v->doc.p = s.p;
    int sd = 0, st = 0, sv = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        switch (f) {
        case 1:
            if (sd++) FAIL(c);
            v->doc = rd_str(c, &r, wt);
            break;
        case 2:
            if (st++) FAIL(c);
            v->type = parse_type(c, rd_ld(c, &r, wt));
            break;
        case 3:
            if (sv++) FAIL(c);
            parse_immediate(c, rd_ld(c, &r, wt), v);
            break;
        case 5:
            if (sv++) FAIL(c);
            parse_blob(c, rd_ld(c, &r, wt), v);
            break;
        default:
            FAIL(c);
        }
    }
    leave(c);
    return v;
}

/* A lazily stored message parsed where it sits: `parent` is the depth of its container. */
static Value *parse_value_at(Ctx *c, Slice s, int parent) {
    c->depth = parent;
    return parse_value(c, s);
}

static void parse_var(Ctx *c, Slice s, Var *v) {
    enter(c);
    v->name.p = s.p;
    v->name.n = 0;
    v->type = NULL;
    int s1 = 0, s2 = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f == 1) {
            if (s1++) FAIL(c);
            v->name = rd_str(c, &r, wt);
        } else if (f == 2) {
            if (s2++) FAIL(c);
            v->type = parse_type(c, rd_ld(c, &r, wt));
        } else {
            FAIL(c);
        }
    }
    leave(c);
}

static void parse_entry(Ctx *c, Slice s, Entry *e) {
    enter(c);
    e->key.p = s.p;
    e->key.n = 0;
    e->val.p = s.p;
    e->val.n = 0;
    int s1 = 0, s2 = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f == 1) {
            if (s1++) FAIL(c);
            e->key = rd_str(c, &r, wt);
        } else if (f == 2) {
            if (s2++) FAIL(c);
            e->val = rd_ld(c, &r, wt);
        } else {
            FAIL(c);
        }
    }
    leave(c);
}

static void push_entry(Ctx *c, Vec *v, Slice s) {
    Entry *e = (Entry *)vec_push(c, v, sizeof(Entry));
    parse_entry(c, s, e);
}

static void push_var(Ctx *c, Vec *v, Slice s) {
    Var *x = (Var *)vec_push(c, v, sizeof(Var));
    parse_var(c, s, x);
}

static int entry_cmp(const void *a, const void *b) {
    return slice_cmp(((const Entry *)a)->key, ((const Entry *)b)->key);
}

/* Map entries sorted by key; a key twice is what this module does not take. */
static void sort_entries(Ctx *c, Entry *e, size_t n) {
    if (n > 1) qsort(e, n, sizeof(Entry), entry_cmp);
    for (size_t i = 1; i < n; i++)
        if (slice_cmp(e[i - 1].key, e[i].key) == 0) FAIL(c);
}

/* ---- names and strings ------------------------------------------------------------------- */

static uint8_t g_bare_name_first[256], g_bare_name[256], g_bare_var[256];

static void init_char_classes(void) {
    for (int ch = 0; ch < 256; ch++) {
        int alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
        int dig = ch >= '0' && ch <= '9';
        g_bare_name_first[ch] = (uint8_t)(alpha || ch == '_');
        g_bare_name[ch] = (uint8_t)(alpha || dig || ch == '_' || ch == '.');
        g_bare_var[ch] = (uint8_t)(alpha || dig || ch == '_' || ch == '.' || ch == '@' || ch == '/');
    }
}

static void python_quote(Ctx *c, Slice s) {
    PyObject *str = PyUnicode_DecodeUTF8((const char *)s.p, (Py_ssize_t)s.n, "strict");
    if (!str) {
        PyErr_Clear();
        FAIL(c);
    }
    PyObject *q = PyObject_CallOneArg(g_quote, str);
    Py_DECREF(str);
    if (!q) {
        PyErr_Clear();
        FAIL(c);
    }
    Py_ssize_t n;
    const char *u = PyUnicode_Check(q) ? PyUnicode_AsUTF8AndSize(q, &n) : NULL;
    if (!u) {
        PyErr_Clear();
        Py_DECREF(q);
        FAIL(c);
    }
    if (c->cap - c->len < (size_t)n && c->len + (size_t)n > c->limit) {
        Py_DECREF(q);
        FAIL(c);
    }
    put(c, u, (size_t)n);
    Py_DECREF(q);
}

static const char HEX[] = "0123456789abcdef";

/* lexemes.quote */
static void put_quoted(Ctx *c, Slice s) {
    for (size_t i = 0; i < s.n; i++)
        if (s.p[i] >= 0x80) {
            python_quote(c, s);
            return;
        }
    putch(c, '"');
    for (size_t i = 0; i < s.n; i++) {
        uint8_t b = s.p[i];
        if (b >= 0x20 && b < 0x7f && b != '\\' && b != '"') {
            putch(c, (char)b);
        } else if (b == '\\') {
            PUTS(c, "\\\\");
        } else if (b == '"') {
            PUTS(c, "\\\"");
        } else if (b == '\n') {
            PUTS(c, "\\n");
        } else if (b == '\t') {
            PUTS(c, "\\t");
        } else if (b == '\r') {
            PUTS(c, "\\r");
        } else {
            char e[4] = {'\\', 'x', HEX[b >> 4], HEX[b & 15]};
            put(c, e, 4);
        }
    }
    putch(c, '"');
}

/* lexemes.name */
static void put_name(Ctx *c, Slice s) {
    int bare = s.n > 0 && g_bare_name_first[s.p[0]];
    for (size_t i = 1; bare && i < s.n; i++) bare = g_bare_name[s.p[i]];
    if (bare && is_keyword(s.p, s.n)) bare = 0;
    if (bare && s.n > 5 && memcmp(s.p, "dtype", 5) == 0) {
        int digits = 1;
        for (size_t i = 5; i < s.n; i++)
            if (s.p[i] < '0' || s.p[i] > '9') digits = 0;
        if (digits) bare = 0;
    }
    if (bare)
        put(c, s.p, s.n);
    else
        put_quoted(c, s);
}

/* lexemes.var */
static void put_var(Ctx *c, Slice s) {
    putch(c, '%');
    int bare = s.n > 0;
    for (size_t i = 0; bare && i < s.n; i++) bare = g_bare_var[s.p[i]];
    if (bare)
        put(c, s.p, s.n);
    else
        put_quoted(c, s);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_b64(Ctx *c, const uint8_t *p, size_t n) {
    PUTS(c, "b64\"");
    size_t need = (n + 2) / 3 * 4;
    if (c->cap - c->len < need) grow(c, need);
    char *o = c->out + c->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = B64[(v >> 6) & 63];
        *o++ = B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = B64[(v >> 6) & 63];
        *o++ = '=';
    }
    c->len = (size_t)(o - c->out);
    putch(c, '"');
}

/* ---- floats: lexemes.format_floats ------------------------------------------------------- */

/* numpy's Dragon4 in its "unique" mode: the fewest digits that identify the value among its
 * neighbours in its own precision (boundaries inclusive for an even mantissa), the last digit
 * rounded to the nearer, ties to an even digit. Value = mant * 2^exp. */

#define BIG_WORDS 12
typedef struct {
    int n;
    uint32_t w[BIG_WORDS];
} Big;

static void big_set(Big *b, uint64_t x) {
    b->n = 0;
    while (x) {
        b->w[b->n++] = (uint32_t)x;
        x >>= 32;
    }
}

static void big_trim(Big *b) {
    while (b->n && !b->w[b->n - 1]) b->n--;
}

static int big_mul_small(Big *b, uint32_t m) {
    uint64_t carry = 0;
    for (int i = 0; i < b->n; i++) {
        uint64_t p = (uint64_t)b->w[i] * m + carry;
        b->w[i] = (uint32_t)p;
        carry = p >> 32;
    }
    if (carry) {
        if (b->n == BIG_WORDS) return 0;
        b->w[b->n++] = (uint32_t)carry;
    }
    return 1;
}

static int big_shl(Big *b, int sh) {
    if (!b->n || !sh) return 1;
    int words = sh / 32, bits = sh % 32;
    if (b->n + words + 1 > BIG_WORDS) return 0;
    uint32_t out[BIG_WORDS];
    memset(out, 0, sizeof(out));
    for (int i = 0; i < b->n; i++) {
        uint64_t v = (uint64_t)b->w[i] << bits;
        out[i + words] |= (uint32_t)v;
        out[i + words + 1] |= (uint32_t)(v >> 32);
    }
    b->n = b->n + words + 1;
    memcpy(b->w, out, sizeof(out));
    big_trim(b);
    return 1;
}

static int big_cmp(const Big *a, const Big *b) {
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--)
        if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}

static void big_sub(Big *a, const Big *b) { /* a -= b, a >= b */
    int64_t borrow = 0;
    for (int i = 0; i < a->n; i++) {
        int64_t d = (int64_t)a->w[i] - (i < b->n ? (int64_t)b->w[i] : 0) - borrow;
        borrow = d < 0;
        a->w[i] = (uint32_t)(d + (borrow ? ((int64_t)1 << 32) : 0));
    }
    big_trim(a);
}

static int big_add(Big *r, const Big *a, const Big *b) {
    int n = a->n > b->n ? a->n : b->n;
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = (i < a->n ? a->w[i] : 0) + (uint64_t)(i < b->n ? b->w[i] : 0) + carry;
        r->w[i] = (uint32_t)s;
        carry = s >> 32;
    }
    r->n = n;
    if (carry) {
        if (n == BIG_WORDS) return 0;
        r->w[r->n++] = (uint32_t)carry;
    }
    return 1;
}

static int big_mul_pow10(Big *b, int k) {
    while (k >= 9) {
        if (!big_mul_small(b, 1000000000u)) return 0;
        k -= 9;
    }
    static const uint32_t p10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    return big_mul_small(b, p10[k]);
}

static const uint64_t POW10[20] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
    10000000ull, 100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
    1000000000000ull, 10000000000000ull, 100000000000000ull, 1000000000000000ull,
    10000000000000000ull, 100000000000000000ull, 1000000000000000000ull,
    10000000000000000000ull};

static const double DPOW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int estimate_k(int mantissa_bit, int exp) {
    return (int)ceil((double)(mantissa_bit + exp) * 0.30102999566398119521373889472449 - 0.69);
}

/* Rounds the last dig; returns the dig count, adjusts *E on a carry out of the first. */
static int finish_digits(char *d, int nd, int dig, int low, int high, int cmp2, int *E) {
    int round_down = low;
    if (low == high) {
        round_down = cmp2 < 0;
        if (cmp2 == 0) round_down = (dig & 1) == 0;
    }
    if (round_down) {
        d[nd++] = (char)('0' + dig);
        return nd;
    }
    if (dig < 9) {
        d[nd++] = (char)('0' + dig + 1);
        return nd;
    }
    while (nd > 0) {
        if (d[nd - 1] != '9') {
            d[nd - 1]++;
            return nd;
        }
        nd--;
    }
    d[0] = '1';
    *E += 1;
    return 1;
}

/* 64-bit arithmetic when everything fits; 0 when it does not (the bignum path then runs). */
static int dragon4_fast(uint64_t mant, int exp, int mbit, int unequal, char *d, int *E) {
    int even = (mant & 1) == 0;
    uint64_t V, S, mL, mH;
    int shS;
    if (exp > 0) {
        if (exp + 3 + mbit >= 60) return 0;
        V = mant << (exp + (unequal ? 2 : 1));
        shS = unequal ? 2 : 1;
        mL = (uint64_t)1 << exp;
    } else {
        shS = -exp + (unequal ? 2 : 1);
        if (shS >= 58) return 0;
        V = mant << (unequal ? 2 : 1);
        mL = 1;
    }
    S = (uint64_t)1 << shS;
    int k = estimate_k(mbit, exp);
    if (k > 0) {
        if (k > 17 || POW10[k] > (((uint64_t)1 << 58) >> shS)) return 0;
        S = POW10[k] << shS;
    } else if (k < 0) {
        if (-k > 18) return 0;
        uint64_t p = POW10[-k];
        if (V > UINT64_MAX / 10 / p) return 0;
        V *= p;
        mL *= p;
    }
    mH = unequal ? 2 * mL : mL;
    if (V >= S) {
        k += 1;
    } else {
        V *= 10;
        mL *= 10;
        mH = unequal ? 2 * mL : mL;
    }
    *E = k - 1;
    int nd = 0, dig, low, high;
    for (;;) {
        dig = (int)(V / S);
        V %= S;
        if (dig > 9) return 0;
        low = even ? V <= mL : V < mL;
        high = even ? V + mH >= S : V + mH > S;
        if (low || high || nd >= 40) break;
        d[nd++] = (char)('0' + dig);
        V *= 10;
        mL *= 10;
        mH = unequal ? 2 * mL : mL;
    }
    int cmp2 = 2 * V < S ? -1 : 2 * V > S ? 1 : 0;
    return finish_digits(d, nd, dig, low, high, cmp2, E);
}

static int dragon4_slow(uint64_t mant, int exp, int mbit, int unequal, char *d, int *E) {
    int even = (mant & 1) == 0;
    Big V, S, mL, mH, T;
    big_set(&V, mant);
    if (exp > 0) {
        if (!big_shl(&V, exp + (unequal ? 2 : 1))) return 0;
        big_set(&S, unequal ? 4 : 2);
        big_set(&mL, 1);
        if (!big_shl(&mL, exp)) return 0;
    } else {
        if (!big_shl(&V, unequal ? 2 : 1)) return 0;
        big_set(&S, 1);
        if (!big_shl(&S, -exp + (unequal ? 2 : 1))) return 0;
        big_set(&mL, 1);
    }
    int k = estimate_k(mbit, exp);
    if (k > 0) {
        if (!big_mul_pow10(&S, k)) return 0;
    } else if (k < 0) {
        if (!big_mul_pow10(&V, -k) || !big_mul_pow10(&mL, -k)) return 0;
    }
    if (big_cmp(&V, &S) >= 0) {
        k += 1;
    } else {
        if (!big_mul_small(&V, 10) || !big_mul_small(&mL, 10)) return 0;
    }
    mH = mL;
    if (unequal && !big_mul_small(&mH, 2)) return 0;
    *E = k - 1;
    int nd = 0, dig, low, high;
    for (;;) {
        dig = 0;
        while (big_cmp(&V, &S) >= 0) {
            big_sub(&V, &S);
            if (++dig > 9) return 0;
        }
        int c1 = big_cmp(&V, &mL);
        low = even ? c1 <= 0 : c1 < 0;
        if (!big_add(&T, &V, &mH)) return 0;
        int c2 = big_cmp(&T, &S);
        high = even ? c2 >= 0 : c2 > 0;
        if (low || high || nd >= 40) break;
        d[nd++] = (char)('0' + dig);
        if (!big_mul_small(&V, 10) || !big_mul_small(&mL, 10)) return 0;
        mH = mL;
        if (unequal && !big_mul_small(&mH, 2)) return 0;
    }
    T = V;
    if (!big_mul_small(&T, 2)) return 0;
    int cmp2 = big_cmp(&T, &S);
    return finish_digits(d, nd, dig, low, high, cmp2, E);
}

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp((double)(m | 1024), e - 25) : ldexp((double)m, -24);
    return (h & 0x8000) ? -v : v;
}

/* float64 -> binary16 bits, round to nearest even (numpy's astype(float16)). */
static uint16_t double_to_half(double d) {
    uint64_t b;
    memcpy(&b, &d, 8);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000);
    uint64_t ab = b & 0x7FFFFFFFFFFFFFFFull;
    if (ab >= 0x7FF0000000000000ull) return (uint16_t)(sign | (ab > 0x7FF0000000000000ull ? 0x7E00 : 0x7C00));
    int e = (int)(ab >> 52) - 1023;
    if (e < -30) return sign; /* below a quarter of the smallest subnormal */
    uint64_t m = (ab & 0xFFFFFFFFFFFFFull) | (1ull << 52);
    if (e >= 16) return (uint16_t)(sign | 0x7C00);
    uint64_t q, rem, half;
    int shift;
    if (e >= -14) {
        shift = 42;
    } else {
        shift = 28 - e; /* units of 2^-24 */
    }
    q = m >> shift;
    rem = m & (((uint64_t)1 << shift) - 1);
    half = (uint64_t)1 << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    uint32_t bits;
    if (e >= -14)
        bits = (uint32_t)(((e + 14) << 10) + q);
    else
        bits = (uint32_t)q;
    if (bits >= 0x7C00) bits = 0x7C00;
    return (uint16_t)(sign | bits);
}

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* packing._nearest_fp8 for a float that is not NaN */
static int nearest_fp8(const Fp8Table *t, double v) {
    if (v == 0) return signbit(v) ? 0x80 : 0x00;
    if (isinf(v)) {
        int code = v > 0 ? t->pos_inf : t->neg_inf;
        return code >= 0 ? code : (t->canonical | (v > 0 ? 0 : 0x80));
    }
    int n = t->nsorted, lo = 0, hi = n; /* searchsorted left */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->sorted[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    hi = lo;
    if (hi < 1) hi = 1;
    if (hi > n - 1) hi = n - 1;
    lo = hi - 1;
    double dh = t->sorted[hi] - v, dl = v - t->sorted[lo];
    int pick_hi = dh < dl || (dh == dl && t->codes[hi] % 2 == 0);
    return pick_hi ? t->codes[hi] : t->codes[lo];
}

/* repr(float(x)) */
static void put_repr(Ctx *c, double x) {
    char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!s) {
        PyErr_Clear();
        FAIL(c);
    }
    size_t n = strlen(s);
    if (c->cap - c->len < n && c->len + n > c->limit) {
        PyMem_Free(s);
        FAIL(c);
    }
    put(c, s, n);
    PyMem_Free(s);
}

static void put_nan(Ctx *c, uint64_t bits, uint64_t canonical, int hexdigits) {
    if (bits == canonical) {
        PUTS(c, "nan");
        return;
    }
    char buf[32];
    int n = 0;
    buf[n++] = 'n';
    buf[n++] = 'a';
    buf[n++] = 'n';
    buf[n++] = '(';
    buf[n++] = '0';
    buf[n++] = 'x';
    for (int i = hexdigits - 1; i >= 0; i--) buf[n++] = HEX[(bits >> (4 * i)) & 15];
    buf[n++] = ')';
    put(c, buf, (size_t)n);
}

/* One element of a binary16 or binary32 (bf16 and fp8 go through their float32 value). */
static void put_small_float(Ctx *c, int fmt, uint64_t bits) {
    uint64_t mant;
    int exp, mbit, unequal, neg;
    double value;
    int fp16 = fmt == F_FP16;
    uint32_t f32 = 0;
    if (fp16) {
        uint16_t h = (uint16_t)bits;
        int e = (h >> 10) & 31, m = h & 1023;
        neg = h >> 15;
        if (e == 31) {
            if (m) {
                put_nan(c, h, g_dt[10].canonical_nan, 4);
            } else if (neg) {
                PUTS(c, "-inf");
            } else {
                PUTS(c, "inf");
            }
            return;
        }
        if (e) {
            mant = (uint64_t)(1024 | m);
            exp = e - 25;
            mbit = 10;
            unequal = e != 1 && m == 0;
        } else {
            mant = (uint64_t)m;
            exp = -24;
            mbit = 0;
            while (m >> (mbit + 1)) mbit++;
            unequal = 0;
        }
        value = half_to_double(h);
    } else {
        const Fp8Table *t8 = NULL;
        if (fmt == F_FP32) {
            f32 = (uint32_t)bits;
        } else if (fmt == F_BF16) {
            f32 = (uint32_t)bits << 16;
        } else {
            t8 = &g_fp8[fmt == F_FP8E5M2];
            float fv = t8->value[bits & 255];
            if (isnan(fv)) {
                put_nan(c, bits & 255, t8->canonical, 2);
                return;
            }
            f32 = float_bits(fv);
        }
        int e = (int)((f32 >> 23) & 255);
        uint32_t m = f32 & 0x7FFFFF;
        neg = (int)(f32 >> 31);
        if (e == 255) {
            if (m) {
                if (fmt == F_FP32)
                    put_nan(c, bits, g_dt[11].canonical_nan, 8);
                else
                    put_nan(c, bits, g_dt[13].canonical_nan, 4);
            } else if (neg) {
                PUTS(c, "-inf");
            } else {
                PUTS(c, "inf");
            }
            return;
        }
        if (e) {
            mant = (uint64_t)(m | 0x800000);
            exp = e - 150;
            mbit = 23;
            unequal = e != 1 && m == 0;
        } else {
            mant = m;
            exp = -149;
            mbit = 0;
            while (m >> (mbit + 1)) mbit++;
            unequal = 0;
        }
        value = (double)bits_float(f32);
    }

    char d[48];
    int E = 0, nd;
    if (mant == 0) {
        d[0] = '0';
        nd = 1;
        E = 0;
    } else {
        nd = c->force_slow ? 0 : dragon4_fast(mant, exp, mbit, unequal, d, &E);
        if (!nd) nd = dragon4_slow(mant, exp, mbit, unequal, d, &E);
        if (!nd) FAIL(c);
    }

    /* layout: positional from 1e-4 to 1e16 (as Python's repr), scientific outside */
    char buf[96];
    int n = 0;
    if (neg) buf[n++] = '-';
    double a = fabs(value);
    if (a == 0 || (a >= 1e-4 && a < 1e16)) {
        if (E >= 0) {
            if (nd <= E + 1) {
                memcpy(buf + n, d, (size_t)nd);
                n += nd;
                for (int i = nd; i < E + 1; i++) buf[n++] = '0';
                buf[n++] = '.';
                buf[n++] = '0';
            } else {
                memcpy(buf + n, d, (size_t)(E + 1));
                n += E + 1;
                buf[n++] = '.';
                memcpy(buf + n, d + E + 1, (size_t)(nd - E - 1));
                n += nd - E - 1;
            }
        } else {
            buf[n++] = '0';
            buf[n++] = '.';
            for (int i = 0; i < -E - 1; i++) buf[n++] = '0';
            memcpy(buf + n, d, (size_t)nd);
            n += nd;
        }
    } else {
        buf[n++] = d[0];
        if (nd > 1) {
            buf[n++] = '.';
            memcpy(buf + n, d + 1, (size_t)(nd - 1));
            n += nd - 1;
        }
        buf[n++] = 'e';
        int x = E;
        buf[n++] = x < 0 ? '-' : '+';
        if (x < 0) x = -x;
        if (x >= 100) buf[n++] = (char)('0' + x / 100);
        buf[n++] = (char)('0' + (x / 10) % 10);
        buf[n++] = (char)('0' + x % 10);
    }
    buf[n] = 0;

    /* Decimal -> double -> dtype can round twice; where that lands elsewhere, repr(double). */
    double back;
    int q = E - nd + 1;
    if (nd <= 15 && q >= -22 && q <= 22) {
        uint64_t D = 0;
        for (int i = 0; i < nd; i++) D = D * 10 + (uint64_t)(d[i] - '0');
        back = (double)D;
        if (q >= 0)
            back *= DPOW10[q];
        else
            back /= DPOW10[-q];
        if (neg) back = -back;
    } else {
        back = PyOS_string_to_double(buf, NULL, NULL);
        if (back == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            FAIL(c);
        }
    }
    int same;
    if (fp16) {
        same = double_to_half(back) == (uint16_t)bits;
    } else if (fmt == F_FP32) {
        same = float_bits((float)back) == (uint32_t)bits;
    } else if (fmt == F_BF16) {
        uint64_t u = float_bits((float)back);
        same = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) == bits;
    } else {
        same = (uint64_t)nearest_fp8(&g_fp8[fmt == F_FP8E5M2], (double)(float)back) == (bits & 255);
    }
    if (same)
        put(c, buf, (size_t)n);
    else
        put_repr(c, value);
}

static void put_float(Ctx *c, int fmt, uint64_t bits) {
    if (fmt == F_FP64) {
        if ((bits & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (bits & 0xFFFFFFFFFFFFFull)) {
            put_nan(c, bits, g_dt[12].canonical_nan, 16);
            return;
        }
        double x;
        memcpy(&x, &bits, 8);
        put_repr(c, x);
        return;
    }
    put_small_float(c, fmt, bits);
}

/* ---- tensor elements --------------------------------------------------------------------- */

typedef struct {
    size_t n;
    int kind;              /* K_FLOAT (raw bits), K_STRING, else ints */
    const uint8_t *raw;    /* floats: little-endian elements of `width` bytes */
    int width;
    int64_t *ints;
    int u64;               /* ints hold uint64 bit patterns */
    const Slice *strs;
} Elems;

static uint64_t load_le(const uint8_t *p, int width) {
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

typedef struct {
    int known;       /* the shape says how many elements: all dims constant, no odd rank */
    uint64_t n;      /* UINT64_MAX: more than any tensor holds */
} Count;

static Count element_count(const Type *t) {
    Count r;
    r.known = !t->has_rank;
    r.n = 1;
    for (size_t i = 0; i < t->ndims; i++)
        if (t->dims[i].kind != DIM_CONST) r.known = 0;
    if (!r.known) return r;
    int zero = 0, big = 0;
    for (size_t i = 0; i < t->ndims; i++) {
        uint64_t d = t->dims[i].size;
        if (d == 0) zero = 1;
        else if (!big && r.n > UINT64_MAX / d) big = 1;
        else if (!big) r.n *= d;
    }
    r.n = zero ? 0 : big ? UINT64_MAX : r.n;
    return r;
}

/* printer._decoded: the elements of `v` as `dt`, 0 when they do not decode as it. The storage
 * field is dt->storage (callers check). */
static int decode(Ctx *c, const DType *dt, const Value *v, Count count, Elems *e) {
    memset(e, 0, sizeof(*e));
    e->kind = dt->kind;
    switch (v->field) {
    case S_BYTES: {
        const uint8_t *p = v->raw.p;
        size_t len = v->raw.n;
        if (dt->bits > 0 && dt->bits < 8) {
            if (!count.known || count.n > (uint64_t)len * 8) return 0;
            uint64_t nbits = count.n * (uint64_t)dt->bits;
            if ((nbits + 7) / 8 != len) return 0;
            for (uint64_t b = nbits; b < (uint64_t)len * 8; b++)
                if (p[b >> 3] >> (b & 7) & 1) return 0;
            size_t n = (size_t)count.n;
            int64_t *out = (int64_t *)arena_alloc(c, &c->tmp, (n ? n : 1) * sizeof(int64_t));
            for (size_t i = 0; i < n; i++) {
                int64_t x = 0;
                for (int j = 0; j < dt->bits; j++) {
                    uint64_t b = (uint64_t)i * dt->bits + j;
                    x |= (int64_t)((p[b >> 3] >> (b & 7)) & 1) << j;
                }
                if (dt->kind == K_INT && x >= ((int64_t)1 << (dt->bits - 1))) x -= (int64_t)1 << dt->bits;
                out[i] = x;
            }
            e->ints = out;
            e->n = n;
            return 1;
        }
        int width = dt->bits / 8;
        if (!width || len % (size_t)width) return 0;
        e->n = len / (size_t)width;
        if (dt->kind == K_FLOAT) {
            e->raw = p;
            e->width = width;
            return 1;
        }
        if (dt->kind != K_INT && dt->kind != K_UINT) FAIL(c);
        int64_t *out = (int64_t *)arena_alloc(c, &c->tmp, (e->n ? e->n : 1) * sizeof(int64_t));
        for (size_t i = 0; i < e->n; i++) {
            uint64_t x = load_le(p + i * (size_t)width, width);
            if (dt->kind == K_INT && width < 8 && (x >> (width * 8 - 1)) & 1) x -= (uint64_t)1 << (width * 8);
            out[i] = (int64_t)x;
        }
        e->ints = out;
        e->u64 = dt->kind == K_UINT && width == 8;
        return 1;
    }
    case S_FLOATS:
    case S_DOUBLES:
        if (dt->kind != K_FLOAT) FAIL(c);
        e->raw = v->raw.p;
        e->width = v->field == S_FLOATS ? 4 : 8;
        e->n = v->n;
        return 1;
    case S_STRINGS:
        e->strs = v->strs;
        e->n = v->n;
        return 1;
    case S_INTS:
    case S_LONGINTS:
    case S_BOOLS: {
        e->n = v->n;
        if (dt->kind == K_BOOL) {
            if (v->field != S_BOOLS) FAIL(c);
            e->ints = v->ints;
            return 1;
        }
        if (v->field == S_BOOLS || (dt->kind != K_INT && dt->kind != K_UINT)) FAIL(c);
        int src = v->field == S_INTS ? 32 : 64, db = dt->bits;
        if (db >= src && dt->kind == K_INT) {
            e->ints = v->ints;
            return 1;
        }
        int64_t *out = (int64_t *)arena_alloc(c, &c->tmp, (e->n ? e->n : 1) * sizeof(int64_t));
        for (size_t i = 0; i < e->n; i++) {
            int64_t x = v->ints[i];
            if (db >= src) { /* unsigned at least as wide: wraps, and reads back the same */
                out[i] = db >= 64 ? x : (int64_t)((uint64_t)x & (((uint64_t)1 << db) - 1));
            } else if (dt->kind == K_INT) {
                if (x < -((int64_t)1 << (db - 1)) || x >= ((int64_t)1 << (db - 1))) return 0;
                out[i] = x;
            } else {
                if (x < 0 || x >= ((int64_t)1 << db)) return 0;
                out[i] = x;
            }
        }
        e->ints = out;
        e->u64 = dt->kind == K_UINT && db == 64;
        return 1;
    }
    default:
        return 0;
    }
}

static void put_scalar(Ctx *c, const DType *dt, const Elems *e, size_t i) {
    switch (e->kind) {
    case K_FLOAT:
        put_float(c, dt->fmt, load_le(e->raw + i * (size_t)e->width, e->width));
        break;
    case K_STRING:
        put_quoted(c, e->strs[i]);
        break;
    case K_BOOL:
        if (e->ints[i])
            PUTS(c, "True");
        else
            PUTS(c, "False");
        break;
    default:
        if (e->u64)
            put_u64(c, (uint64_t)e->ints[i]);
        else
            put_i64(c, e->ints[i]);
    }
}

static void put_flat(Ctx *c, const DType *dt, const Elems *e, size_t start, size_t n) {
    putch(c, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) PUTS(c, ", ");
        put_scalar(c, dt, e, start + i);
    }
    putch(c, ']');
}

static void put_nested(Ctx *c, const DType *dt, const Elems *e, const Dim *dims, size_t nd,
                       size_t start, size_t n) {
    if (nd == 1) {
        put_flat(c, dt, e, start, n);
        return;
    }
    uint64_t d0 = dims[0].size;
    size_t step = d0 ? (size_t)(n / d0) : 0;
    putch(c, '[');
    for (uint64_t i = 0; i < d0; i++) {
        if (i) PUTS(c, ", ");
        put_nested(c, dt, e, dims + 1, nd - 1, start + (size_t)i * step, step);
    }
    putch(c, ']');
}

/* Little-endian bytes of the elements in dt's width (packing.pack) for a b64 literal. */
static void put_packed_b64(Ctx *c, const DType *dt, const Value *v, const Elems *e) {
    if (v->field == S_BYTES || v->field == S_FLOATS || v->field == S_DOUBLES) {
        put_b64(c, v->raw.p, v->raw.n);
        return;
    }
    int width = dt->bits / 8;
    if (width < 1 || width > 8) FAIL(c);
    uint8_t *buf = (uint8_t *)arena_alloc(c, &c->tmp, e->n * (size_t)width + 1);
    for (size_t i = 0; i < e->n; i++) {
        uint64_t x = (uint64_t)e->ints[i];
        for (int j = 0; j < width; j++) buf[i * (size_t)width + (size_t)j] = (uint8_t)(x >> (8 * j));
    }
    put_b64(c, buf, e->n * (size_t)width);
}

/* printer._empty_nesting: the product of the sizes before the first zero, capped. */
static uint64_t empty_nesting(const Type *t) {
    uint64_t total = 1;
    for (size_t i = 0; i + 1 < t->ndims; i++) {
        if (t->dims[i].size == 0) break;
        total *= t->dims[i].size;
        if (total > g_inline_limit) break;
    }
    return total;
}

/* printer._tensor_literal; `t` is the shape's type (NULL: no shape). 0 for None. */
static int tensor_literal(Ctx *c, const DType *dt, const Value *v, Count count, const Type *t,
                          int allow_b64) {
    Elems e;
    Mark m = mark(c);
    if (!decode(c, dt, v, count, &e)) {
        release(c, m);
        return 0;
    }
    size_t n = e.n;
    if (n > g_inline_limit && dt->kind != K_STRING) {
        if (!allow_b64 || (count.known && (uint64_t)n != count.n)) {
            release(c, m);
            return 0;
        }
        put_packed_b64(c, dt, v, &e);
        release(c, m);
        return 1;
    }
    if (t && count.known && count.n == (uint64_t)n) {
        if (t->ndims == 0) {
            put_scalar(c, dt, &e, 0);
        } else {
            if (t->ndims > MAX_NEST_DIMS) FAIL(c);
            if (n == 0 && empty_nesting(t) > g_inline_limit) {
                /* printer._empty_nesting: (10**9, 0) would nest a billion `[]`s */
                if (!allow_b64) {
                    release(c, m);
                    return 0;
                }
                PUTS(c, "[]");
            } else {
                put_nested(c, dt, &e, t->dims, t->ndims, 0, n);
            }
        }
    } else if (allow_b64) {
        put_flat(c, dt, &e, 0, n);
    } else {
        release(c, m);
        return 0;
    }
    release(c, m);
    return 1;
}

/* ---- types and values -------------------------------------------------------------------- */

static void put_dim(Ctx *c, Dim d) {
    switch (d.kind) {
    case DIM_CONST:
        put_u64(c, d.size);
        break;
    case DIM_NONE:
        putch(c, '?');
        break;
    case DIM_VAR:
        putch(c, '*');
        break;
    default:
        putch(c, '_');
    }
}

static void type_text(Ctx *c, const Type *t) {
    if (!t) {
        putch(c, '_');
        return;
    }
    switch (t->kind) {
    case TY_TENSOR:
        putch(c, '(');
        if (t->has_rank && t->rank == -1 && t->ndims == 0) {
            PUTS(c, "..., ");
            put(c, t->dt->name, t->dt->namelen);
        } else {
            for (size_t i = 0; i < t->ndims; i++) {
                put_dim(c, t->dims[i]);
                PUTS(c, ", ");
            }
            put(c, t->dt->name, t->dt->namelen);
            if (t->has_rank) {
                PUTS(c, ", rank=");
                put_i64(c, t->rank);
            }
        }
        putch(c, ')');
        break;
    case TY_LIST:
        PUTS(c, "List[");
        if (t->has_len) {
            put_dim(c, t->len);
            PUTS(c, ", ");
        }
        type_text(c, t->a);
        putch(c, ']');
        break;
    case TY_TUPLE:
        PUTS(c, "Tuple[");
        for (size_t i = 0; i < t->n; i++) {
            if (i) PUTS(c, ", ");
            type_text(c, t->items[i]);
        }
        putch(c, ']');
        break;
    case TY_DICT:
        PUTS(c, "Dict[");
        type_text(c, t->a);
        PUTS(c, ", ");
        type_text(c, t->b);
        putch(c, ']');
        break;
    case TY_STATE:
        if (t->a && t->a->kind == TY_TENSOR) {
            type_text(c, t->a);
            PUTS(c, "(State)");
        } else {
            PUTS(c, "State[");
            type_text(c, t->a);
            putch(c, ']');
        }
        break;
    default:
        PUTS(c, "unknown");
    }
}

static int dim_eq(Dim a, Dim b) { return a.kind == b.kind && (a.kind != DIM_CONST || a.size == b.size); }

static int type_eq(const Type *a, const Type *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case TY_TENSOR:
        if (a->dt != b->dt || a->ndims != b->ndims || a->has_rank != b->has_rank) return 0;
        if (a->has_rank && a->rank != b->rank) return 0;
        for (size_t i = 0; i < a->ndims; i++)
            if (!dim_eq(a->dims[i], b->dims[i])) return 0;
        return 1;
    case TY_LIST:
        if (a->has_len != b->has_len || (a->has_len && !dim_eq(a->len, b->len))) return 0;
        return type_eq(a->a, b->a);
    case TY_TUPLE:
        if (a->n != b->n) return 0;
        for (size_t i = 0; i < a->n; i++)
            if (!type_eq(a->items[i], b->items[i])) return 0;
        return 1;
    case TY_DICT:
        return type_eq(a->a, b->a) && type_eq(a->b, b->b);
    case TY_STATE:
        return type_eq(a->a, b->a);
    default:
        return 1;
    }
}

static void value_text(Ctx *c, const Value *v, const Type *ctx);

static int short_form(Ctx *c, const Value *v, int bare);

static int is_bare_text(Ctx *c, size_t start) {
    const char *s = c->out + start;
    size_t n = c->len - start;
    if (!n) return 1;
    char ch = s[0];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (unsigned char)ch >= 0x80)) return 1;
    return (n == 4 && memcmp(s, "True", 4) == 0) || (n == 5 && memcmp(s, "False", 5) == 0) ||
           (n == 3 && (memcmp(s, "nan", 3) == 0 || memcmp(s, "inf", 3) == 0));
}

/* printer._bare_dict */
static int bare_dict(Ctx *c, const Type *t, const Value *v) {
    const Type *sides[2] = {t->a, t->b};
    for (int i = 0; i < 2; i++) {
        const Type *s = sides[i];
        if (!s || s->kind != TY_TENSOR || s->ndims || s->has_rank || !s->dt->bare_default) return 0;
    }
    size_t start = c->len;
    putch(c, '{');
    for (size_t i = 0; i < v->n; i++) {
        const Value *k = v->pairs[i].k, *x = v->pairs[i].v;
        if (!k || !x || k->doc.n || x->doc.n || !type_eq(k->type, t->a) || !type_eq(x->type, t->b)) {
            c->len = start;
            return 0;
        }
        if (i) PUTS(c, ", ");
        size_t ks = c->len;
        if (!short_form(c, k, 1) || !is_bare_text(c, ks)) {
            c->len = start;
            return 0;
        }
        PUTS(c, ": ");
        size_t vs = c->len;
        if (!short_form(c, x, 1) || !is_bare_text(c, vs)) {
            c->len = start;
            return 0;
        }
    }
    putch(c, '}');
    return 1;
}

/* printer._short_form */
static int short_form(Ctx *c, const Value *v, int bare) {
    const Type *t = v->type;
    if (t && t->kind == TY_TENSOR) {
        if (t->has_rank || v->dk != D_TENSOR) return 0;
        for (size_t i = 0; i < t->ndims; i++) {
            if (t->dims[i].kind != DIM_CONST) return 0;
            if (i + 1 < t->ndims && t->dims[i].size == 0) return 0;
        }
        const DType *dt = t->dt;
        if (dt->kind == K_NONE) return 0;
        Count count = element_count(t);
        if (count.n > g_inline_limit && dt->kind != K_STRING) return 0;
        if (dt->storage != v->field) return 0;
        int plain = bare && dt->bare_default && (count.n != 0 || dt->is_fp32);
        size_t start = c->len;
        if (!plain) {
            put(c, dt->name, dt->namelen);
            putch(c, '(');
        }
        if (!tensor_literal(c, dt, v, count, t, 0)) {
            c->len = start;
            return 0;
        }
        if (!plain) putch(c, ')');
        return 1;
    }
    if (bare && t && t->kind == TY_DICT && v->dk == D_DICT && v->n) return bare_dict(c, t, v);
    return 0;
}

static void put_side(Ctx *c, const Value *v, const Type *ctx) {
    if (!v)
        putch(c, '_');
    else
        value_text(c, v, ctx);
}

/* blob_layout.Layout.implied: whether the blob is where the weight file's layout puts it (the
 * first blob of a file at 64, each next one 64-aligned after the one before and its data);
 * advances the file's next offset */
static int blob_implied(Ctx *c, const Type *t, const Value *v) {
    int i = 0;
    while (i < c->nlay && !(c->lay_file_len[i] == v->file.n &&
                            (v->file.n == 0 || memcmp(c->lay_file[i], v->file.p, v->file.n) == 0))) i++;
    if (i == c->nlay) {
        if (c->nlay == LAYOUT_FILES) FAIL(c);
        c->lay_file[i] = v->file.p;
        c->lay_file_len[i] = v->file.n;
        c->lay_next[i] = 64;
        c->lay_known[i] = 1;
        c->nlay++;
    }
    int implied = c->lay_known[i] && c->lay_next[i] == v->offset;
    if (t && t->kind == TY_STATE) t = t->a;
    c->lay_known[i] = 0;
    if (t && t->kind == TY_TENSOR && t->dt->bits > 0) {
        Count count = element_count(t);
        uint64_t bits = (uint64_t)t->dt->bits;
        if (count.known && count.n <= (UINT64_MAX - 7) / bits) {
            uint64_t size = (count.n * bits + 7) / 8;
            if (v->offset <= UINT64_MAX - 64 - 63 - size) {
                c->lay_next[i] = (v->offset + 64 + size + 63) / 64 * 64;
                c->lay_known[i] = 1;
            }
        }
    }
    return implied;
}

/* printer.data_text; 0 for None */
static int data_text(Ctx *c, const Type *t, const Value *v) {
    if (v->dk == D_BLOB) {
        int other_file = !(v->file.n == g_weight_file_len && memcmp(v->file.p, g_weight_file, g_weight_file_len) == 0);
        if (blob_implied(c, t, v)) {
            PUTS(c, "blob");
            if (other_file) {
                putch(c, '(');
                put_quoted(c, v->file);
                putch(c, ')');
            }
            return 1;
        }
        PUTS(c, "blob(");
        if (other_file) {
            put_quoted(c, v->file);
            PUTS(c, ", ");
        }
        put_u64(c, v->offset);
        putch(c, ')');
        return 1;
    }
    if (t && t->kind == TY_STATE && t->a && t->a->kind == TY_TENSOR) t = t->a;
    if (!t) return 0;
    if (t->kind == TY_TENSOR && v->dk == D_TENSOR) {
        const DType *dt = t->dt;
        if (dt->storage != v->field || dt->storage == S_NONE) return 0;
        Count count = element_count(t);
        return tensor_literal(c, dt, v, count, count.known ? t : NULL, 1);
    }
    if (t->kind == TY_LIST && v->dk == D_LIST) {
        putch(c, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            value_text(c, v->items[i], t->a);
        }
        putch(c, ']');
        return 1;
    }
    if (t->kind == TY_TUPLE && v->dk == D_TUPLE) {
        putch(c, '(');
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            value_text(c, v->items[i], i < t->n ? t->items[i] : NULL);
        }
        putch(c, ')');
        return 1;
    }
    if (t->kind == TY_DICT && v->dk == D_DICT) {
        putch(c, '{');
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            put_side(c, v->pairs[i].k, t->a);
            PUTS(c, ": ");
            put_side(c, v->pairs[i].v, t->b);
        }
        putch(c, '}');
        return 1;
    }
    return 0;
}

/* printer._storage_payload */
static void storage_payload(Ctx *c, const Value *v) {
    if (v->field == S_BYTES) {
        put_b64(c, v->raw.p, v->raw.n);
        return;
    }
    if (v->field == S_STRINGS) {
        putch(c, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            put_quoted(c, v->strs[i]);
        }
        putch(c, ']');
        return;
    }
    const DType *dt = g_storage_dt[v->field];
    if (!dt) FAIL(c);
    Count none = {0, 0};
    if (v->n > g_inline_limit) {
        if (v->field == S_FLOATS || v->field == S_DOUBLES) {
            put_b64(c, v->raw.p, v->raw.n);
        } else {
            Elems e;
            Mark m = mark(c);
            if (!decode(c, dt, v, none, &e)) FAIL(c);
            put_packed_b64(c, dt, v, &e);
            release(c, m);
        }
        return;
    }
    if (!tensor_literal(c, dt, v, none, NULL, 1)) FAIL(c);
}

/* printer._escaped_data */
static void escaped_data(Ctx *c, const Value *v) {
    switch (v->dk) {
    case D_TENSOR:
        if (v->field == S_NONE) {
            PUTS(c, "tensor: _");
        } else {
            put(c, FIELD_NAMES[v->field], strlen(FIELD_NAMES[v->field]));
            PUTS(c, ": ");
            storage_payload(c, v);
        }
        break;
    case D_TUPLE:
        PUTS(c, "tuple: (");
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            value_text(c, v->items[i], NULL);
        }
        putch(c, ')');
        break;
    case D_LIST:
        PUTS(c, "list: [");
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            value_text(c, v->items[i], NULL);
        }
        putch(c, ']');
        break;
    case D_DICT:
        PUTS(c, "dict: {");
        for (size_t i = 0; i < v->n; i++) {
            if (i) PUTS(c, ", ");
            put_side(c, v->pairs[i].k, NULL);
            PUTS(c, ": ");
            put_side(c, v->pairs[i].v, NULL);
        }
        putch(c, '}');
        break;
    case D_EMPTY:
        PUTS(c, "immediate: _");
        break;
    default:
        FAIL(c);
    }
}

/* printer._full_form */
static void full_form(Ctx *c, const Value *v) {
    type_text(c, v->type);
    putch(c, '(');
    size_t start = c->len;
    if (v->dk != D_NONE && !data_text(c, v->type, v)) escaped_data(c, v);
    if (v->doc.n) {
        if (c->len > start) PUTS(c, ", ");
        PUTS(c, "doc=");
        put_quoted(c, v->doc);
    }
    putch(c, ')');
}

/* printer.value_text; ctx NULL is no context */
static void value_text(Ctx *c, const Value *v, const Type *ctx) {
    if (ctx && ctx->kind == TY_UNKNOWN) ctx = NULL;
    const Type *t = v->type;
    if (v->dk == D_TENSOR && v->field == S_STRINGS && t && t->kind == TY_TENSOR &&
        t->dt->kind == K_STRING && t->ndims == 0 && !t->has_rank && v->n == 1 && !v->doc.n &&
        (!ctx || type_eq(ctx, t))) {
        put_quoted(c, v->strs[0]);
        return;
    }
    if (!v->doc.n) {
        if (ctx && type_eq(t, ctx) && ctx->kind != TY_TUPLE) {
            size_t start = c->len;
            if (data_text(c, t, v)) return;
            c->len = start;
        }
        if (short_form(c, v, ctx == NULL)) return;
    }
    full_form(c, v);
}

/* printer.attributes_text; `parent` is the depth of the map entries */
static void attributes_text(Ctx *c, Entry *e, size_t n, int parent) {
    if (!n) return;
    sort_entries(c, e, n);
    putch(c, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) PUTS(c, ", ");
        put_name(c, e[i].key);
        putch(c, '=');
        Mark m = mark(c);
        value_text(c, parse_value_at(c, e[i].val, parent), NULL);
        release(c, m);
    }
    putch(c, ']');
}

static void var_decl(Ctx *c, const Var *v) {
    put_var(c, v->name);
    if (v->type) {
        PUTS(c, ": ");
        type_text(c, v->type);
    }
}

/* ---- operations, blocks, functions ------------------------------------------------------- */

static const OrderSet *order_of(Ctx *c, Slice type) {
    uint32_t h = fnv(type.p, type.n);
    size_t i = h & (ORDER_SLOTS - 1);
    while (c->oset[i].used) {
        OrderSet *o = &c->oset[i];
        if (o->hash == h && o->len == type.n && memcmp(o->name, type.p, type.n) == 0) return o;
        i = (i + 1) & (ORDER_SLOTS - 1);
    }
    if (++c->nosets > ORDER_SLOTS / 2) FAIL(c);
    OrderSet *o = &c->oset[i];
    o->used = 1;
    o->hash = h;
    o->name = type.p;
    o->len = type.n;
    o->ents = NULL;
    o->n = 0;
    PyObject *key = PyUnicode_DecodeUTF8((const char *)type.p, (Py_ssize_t)type.n, "strict");
    if (!key) {
        PyErr_Clear();
        FAIL(c);
    }
    PyObject *d = PyDict_GetItemWithError(c->orders, key);
    Py_DECREF(key);
    if (!d) {
        if (PyErr_Occurred()) {
            PyErr_Clear();
            FAIL(c);
        }
        return o;
    }
    if (!PyDict_Check(d)) FAIL(c);
    Py_ssize_t n = PyDict_Size(d), pos = 0, j = 0;
    o->ents = (OrderEnt *)arena_alloc(c, &c->perm, (size_t)(n ? n : 1) * sizeof(OrderEnt));
    PyObject *k, *val;
    while (PyDict_Next(d, &pos, &k, &val)) {
        if (j >= n || !PyUnicode_Check(k) || !PyLong_Check(val)) FAIL(c);
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(k, &len);
        long rank = PyLong_AsLong(val);
        if (!s || (rank == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            FAIL(c);
        }
        o->ents[j].s = s;
        o->ents[j].n = (size_t)len;
        o->ents[j].rank = rank;
        j++;
    }
    o->n = (size_t)j;
    return o;
}

typedef struct {
    Entry e;
    long rank;
} RankedEntry;

static int ranked_cmp(const void *a, const void *b) {
    const RankedEntry *x = (const RankedEntry *)a, *y = (const RankedEntry *)b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return slice_cmp(x->e.key, y->e.key);
}

typedef struct {
    int kind; /* 0 none, 1 name, 2 value */
    Slice name;
    Value *value;
} Binding;

/* printer.bindings_text for an Argument message at depth `parent` + 1 */
static void bindings_text(Ctx *c, Slice key, Slice arg, int parent) {
    c->depth = parent;
    enter(c);
    Vec bs = {0};
    Rd r = rd_of(arg);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        if (f != 1) FAIL(c);
        Slice m = rd_ld(c, &r, wt);
        Binding *b = (Binding *)vec_push(c, &bs, sizeof(Binding));
        b->kind = 0;
        b->value = NULL;
        enter(c);
        Rd q = rd_of(m);
        uint32_t f2;
        int wt2;
        while (rd_field(c, &q, &f2, &wt2)) {
            if (b->kind) FAIL(c);
            if (f2 == 1) {
                b->kind = 1;
                b->name = rd_str(c, &q, wt2);
            } else if (f2 == 2) {
                b->kind = 2;
                b->value = parse_value(c, rd_ld(c, &q, wt2));
            } else {
                FAIL(c);
            }
        }
        leave(c);
    }
    leave(c);
    Binding *b = (Binding *)bs.data;
    if (bs.n == 1) {
        if (b->kind == 1) {
            put_var(c, b->name);
        } else if (b->kind == 0) {
            PUTS(c, "(_)");
        } else {
            int wrap = slice_eq(key, "name") || slice_eq(key, "val");
            if (wrap) putch(c, '(');
            value_text(c, b->value, NULL);
            if (wrap) putch(c, ')');
        }
        return;
    }
    putch(c, '(');
    for (size_t i = 0; i < bs.n; i++) {
        if (i) PUTS(c, ", ");
        if (b[i].kind == 1)
            put_var(c, b[i].name);
        else if (b[i].kind == 0)
            putch(c, '_');
        else
            value_text(c, b[i].value, NULL);
    }
    putch(c, ')');
}

typedef struct {
    Slice type;
    Vec inputs, outputs, blocks, attrs; /* Entry, Var, Slice, Entry */
} Op;

static void parse_op(Ctx *c, Slice s, int parent, Op *op) {
    c->depth = parent;
    enter(c);
    memset(op, 0, sizeof(*op));
    op->type.p = s.p;
    int st = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        switch (f) {
        case 1:
            if (st++) FAIL(c);
            op->type = rd_str(c, &r, wt);
            break;
        case 2:
            push_entry(c, &op->inputs, rd_ld(c, &r, wt));
            break;
        case 3:
            push_var(c, &op->outputs, rd_ld(c, &r, wt));
            break;
        case 4:
            *(Slice *)vec_push(c, &op->blocks, sizeof(Slice)) = rd_ld(c, &r, wt);
            break;
        case 5:
            push_entry(c, &op->attrs, rd_ld(c, &r, wt));
            break;
        default:
            FAIL(c);
        }
    }
    leave(c);
}

/* printer.op_text for an Operation at depth `depth` */
static void op_text(Ctx *c, Op *op, int depth) {
    Var *outs = (Var *)op->outputs.data;
    for (size_t i = 0; i < op->outputs.n; i++) {
        if (i) PUTS(c, ", ");
        var_decl(c, &outs[i]);
    }
    if (op->outputs.n) PUTS(c, " = ");
    put_name(c, op->type);
    putch(c, '(');

    const OrderSet *order = order_of(c, op->type);
    size_t nin = op->inputs.n;
    Entry *ins = (Entry *)op->inputs.data;
    RankedEntry *ranked = (RankedEntry *)arena_alloc(c, &c->tmp, (nin ? nin : 1) * sizeof(RankedEntry));
    for (size_t i = 0; i < nin; i++) {
        ranked[i].e = ins[i];
        ranked[i].rank = (long)order->n;
        for (size_t j = 0; j < order->n; j++)
            if (order->ents[j].n == ins[i].key.n && memcmp(order->ents[j].s, ins[i].key.p, ins[i].key.n) == 0) {
                ranked[i].rank = order->ents[j].rank;
                break;
            }
    }
    if (nin > 1) qsort(ranked, nin, sizeof(RankedEntry), ranked_cmp);
    for (size_t i = 1; i < nin; i++)
        if (slice_cmp(ranked[i - 1].e.key, ranked[i].e.key) == 0) FAIL(c);
    size_t nargs = 0;
    for (size_t i = 0; i < nin; i++) {
        if (nargs++) PUTS(c, ", ");
        put_name(c, ranked[i].e.key);
        putch(c, '=');
        Mark m = mark(c);
        bindings_text(c, ranked[i].e.key, ranked[i].e.val, depth + 1);
        release(c, m);
    }

    Entry *attrs = (Entry *)op->attrs.data;
    size_t na = op->attrs.n;
    sort_entries(c, attrs, na);
    Entry *rest = (Entry *)arena_alloc(c, &c->tmp, (na ? na : 1) * sizeof(Entry));
    size_t nrest = 0;
    const Entry *val = NULL, *name = NULL;
    for (size_t i = 0; i < na; i++) {
        if (slice_eq(attrs[i].key, "val"))
            val = &attrs[i];
        else if (slice_eq(attrs[i].key, "name"))
            name = &attrs[i];
        else
            rest[nrest++] = attrs[i];
    }
    const Entry *special[2] = {val, name};
    for (int i = 0; i < 2; i++) {
        if (!special[i]) continue;
        if (nargs++) PUTS(c, ", ");
        if (i == 0)
            PUTS(c, "val=");
        else
            PUTS(c, "name=");
        Mark m = mark(c);
        value_text(c, parse_value_at(c, special[i]->val, depth + 1), NULL);
        release(c, m);
    }
    putch(c, ')');
    attributes_text(c, rest, nrest, depth + 1);
}

static void block_lines(Ctx *c, Slice s, int depth, int indent, const Slice *key, long *counter) {
    Mark m0 = mark(c);
    c->depth = depth - 1;
    enter(c);
    Vec inputs = {0}, outputs = {0}, ops = {0}, attrs = {0};
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        switch (f) {
        case 1:
            push_var(c, &inputs, rd_ld(c, &r, wt));
            break;
        case 2:
            *(Slice *)vec_push(c, &outputs, sizeof(Slice)) = rd_str(c, &r, wt);
            break;
        case 3:
            *(Slice *)vec_push(c, &ops, sizeof(Slice)) = rd_ld(c, &r, wt);
            break;
        case 4:
            push_entry(c, &attrs, rd_ld(c, &r, wt));
            break;
        default:
            FAIL(c);
        }
    }
    leave(c);

    put_indent(c, indent);
    PUTS(c, "block");
    put_i64(c, (*counter)++);
    if (key) {
        putch(c, '[');
        put_name(c, *key);
        putch(c, ']');
    }
    putch(c, '(');
    Var *in = (Var *)inputs.data;
    for (size_t i = 0; i < inputs.n; i++) {
        if (i) PUTS(c, ", ");
        var_decl(c, &in[i]);
    }
    putch(c, ')');
    attributes_text(c, (Entry *)attrs.data, attrs.n, depth + 1);
    PUTS(c, " {\n");
    Slice *opv = (Slice *)ops.data;
    for (size_t i = 0; i < ops.n; i++) {
        Mark m = mark(c);
        Op op;
        parse_op(c, opv[i], depth, &op);
        put_indent(c, indent + 1);
        op_text(c, &op, depth + 1);
        putch(c, '\n');
        Slice *nested = (Slice *)op.blocks.data;
        for (size_t j = 0; j < op.blocks.n; j++) block_lines(c, nested[j], depth + 2, indent + 2, NULL, counter);
        release(c, m);
    }
    put_indent(c, indent);
    PUTS(c, "} -> (");
    Slice *outv = (Slice *)outputs.data;
    for (size_t i = 0; i < outputs.n; i++) {
        if (i) PUTS(c, ", ");
        put_var(c, outv[i]);
    }
    PUTS(c, ")\n");
    release(c, m0);
}

static Slice g_opset_for_sort;

static int block_key_cmp(const void *a, const void *b) {
    const Entry *x = (const Entry *)a, *y = (const Entry *)b;
    int xo = slice_cmp(x->key, g_opset_for_sort) != 0, yo = slice_cmp(y->key, g_opset_for_sort) != 0;
    if (xo != yo) return xo - yo;
    return slice_cmp(x->key, y->key);
}

static size_t codepoints(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
    return k;
}

/* printer.function_text: a Function message at depth 3 */
static void function_text(Ctx *c, Slice name, Slice s) {
    Mark m0 = mark(c);
    c->depth = 2;
    enter(c);
    Vec inputs = {0}, blocks = {0}, attrs = {0};
    Slice opset = {s.p, 0};
    int so = 0;
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        switch (f) {
        case 1:
            push_var(c, &inputs, rd_ld(c, &r, wt));
            break;
        case 2:
            if (so++) FAIL(c);
            opset = rd_str(c, &r, wt);
            break;
        case 3:
            push_entry(c, &blocks, rd_ld(c, &r, wt));
            break;
        case 4:
            push_entry(c, &attrs, rd_ld(c, &r, wt));
            break;
        default:
            FAIL(c);
        }
    }
    leave(c);

    size_t head = c->len;
    put_name(c, name);
    if (opset.n) {
        putch(c, '[');
        put_name(c, opset);
        putch(c, ']');
    }
    putch(c, '(');
    size_t width = codepoints(c->out + head, c->len - head);
    Var *in = (Var *)inputs.data;
    for (size_t i = 0; i < inputs.n; i++) {
        if (i) {
            PUTS(c, ",\n");
            put_spaces(c, width);
        }
        var_decl(c, &in[i]);
    }
    putch(c, ')');
    attributes_text(c, (Entry *)attrs.data, attrs.n, 4);
    PUTS(c, " {\n");
    Entry *bl = (Entry *)blocks.data;
    g_opset_for_sort = opset;
    if (blocks.n > 1) qsort(bl, blocks.n, sizeof(Entry), block_key_cmp);
    for (size_t i = 1; i < blocks.n; i++)
        if (slice_cmp(bl[i - 1].key, bl[i].key) == 0) FAIL(c);
    long counter = 0;
    for (size_t i = 0; i < blocks.n; i++) {
        int own = slice_cmp(bl[i].key, opset) == 0;
        block_lines(c, bl[i].val, 5, 1, own ? NULL : &bl[i].key, &counter);
    }
    putch(c, '}');
    release(c, m0);
}

static int function_cmp(const void *a, const void *b) {
    const Entry *x = (const Entry *)a, *y = (const Entry *)b;
    int xm = !slice_eq(x->key, "main"), ym = !slice_eq(y->key, "main");
    if (xm != ym) return xm - ym;
    return slice_cmp(x->key, y->key);
}

static void program_text(Ctx *c, Slice s) {
    c->depth = 0;
    enter(c);
    uint64_t version = 0;
    int sv = 0, sd = 0;
    Slice doc = {s.p, 0};
    Vec functions = {0}, attrs = {0};
    Rd r = rd_of(s);
    uint32_t f;
    int wt;
    while (rd_field(c, &r, &f, &wt)) {
        switch (f) {
        case 1:
            if (sv++) FAIL(c);
            version = rd_vi(c, &r, wt);
            break;
        case 2:
            push_entry(c, &functions, rd_ld(c, &r, wt));
            break;
        case 3:
            if (sd++) FAIL(c);
            doc = rd_str(c, &r, wt);
            break;
        case 4:
            push_entry(c, &attrs, rd_ld(c, &r, wt));
            break;
        default:
            FAIL(c);
        }
    }
    leave(c);
    int parts = 0;
    if (!(version == 1 && !doc.n && !attrs.n)) {
        PUTS(c, "program(version=");
        put_i64(c, (int64_t)version);
        if (doc.n) {
            PUTS(c, ", doc=");
            put_quoted(c, doc);
        }
        putch(c, ')');
        attributes_text(c, (Entry *)attrs.data, attrs.n, 2);
        parts++;
    }
    Entry *fn = (Entry *)functions.data;
    if (functions.n > 1) qsort(fn, functions.n, sizeof(Entry), function_cmp);
    for (size_t i = 1; i < functions.n; i++)
        if (slice_cmp(fn[i - 1].key, fn[i].key) == 0) FAIL(c);
    for (size_t i = 0; i < functions.n; i++) {
        if (parts++) PUTS(c, "\n\n");
        function_text(c, fn[i].key, fn[i].val);
    }
    if (parts) putch(c, '\n');
}

/* ---- Python interface -------------------------------------------------------------------- */

static void ctx_init(Ctx *c, size_t input_len) {
    memset(c, 0, sizeof(*c));
    c->limit = input_len > ((size_t)1 << 40) ? ((size_t)1 << 46) : input_len * 64 + ((size_t)1 << 20);
}

static void ctx_free(Ctx *c) {
    arena_free(&c->tmp);
    arena_free(&c->perm);
    free(c->out);
    c->out = NULL;
}

/* 1: the text is in c->out; 0: failed (c->nomem says whether for memory) */
static int run_program(Ctx *c, Slice s) {
    if (setjmp(c->jb)) return 0;
    c->oset = (OrderSet *)arena_alloc(c, &c->perm, ORDER_SLOTS * sizeof(OrderSet));
    memset(c->oset, 0, ORDER_SLOTS * sizeof(OrderSet));
    program_text(c, s);
    return 1;
}

static PyObject *py_program_text(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    PyObject *orders;
    if (!PyArg_ParseTuple(args, "y*O!:program_text", &buf, &PyDict_Type, &orders)) return NULL;
    if (!g_configured) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_RuntimeError, "miltext.text.mil._fastprint.configure() was not called");
        return NULL;
    }
    Ctx *c = (Ctx *)malloc(sizeof(Ctx));
    if (!c) {
        PyBuffer_Release(&buf);
        return PyErr_NoMemory();
    }
    ctx_init(c, (size_t)buf.len);
    c->orders = orders;
    Slice s;
    s.p = (const uint8_t *)buf.buf;
    s.n = (size_t)buf.len;
    PyObject *result = NULL;
    if (run_program(c, s)) {
        result = PyUnicode_DecodeUTF8(c->out ? c->out : "", (Py_ssize_t)c->len, "strict");
        if (!result) {
            PyErr_Clear();
            result = Py_NewRef(Py_None);
        }
    } else if (c->nomem) {
        PyErr_NoMemory();
    } else {
        result = Py_NewRef(Py_None);
    }
    ctx_free(c);
    free(c);
    PyBuffer_Release(&buf);
    return result;
}

static int dtype_by_name(const char *name) {
    for (int i = 0; i < 256; i++)
        if (g_dt[i].known && strcmp(g_dt[i].name, name) == 0) return i;
    return -1;
}

/* format_floats(dtype_name, raw little-endian bits, force_slow=False) -> list[str] (tests) */
static PyObject *py_format_floats(PyObject *self, PyObject *args) {
    (void)self;
    const char *name;
    Py_buffer buf;
    int force_slow = 0;
    if (!PyArg_ParseTuple(args, "sy*|p:format_floats", &name, &buf, &force_slow)) return NULL;
    int code = g_configured ? dtype_by_name(name) : -1;
    if (code < 0 || g_dt[code].kind != K_FLOAT) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "not a configured float dtype");
        return NULL;
    }
    const DType *dt = &g_dt[code];
    int width = dt->bits / 8;
    size_t n = (size_t)buf.len / (size_t)width;
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    Ctx *c = (Ctx *)malloc(sizeof(Ctx));
    if (!c) {
        Py_DECREF(list);
        PyBuffer_Release(&buf);
        return PyErr_NoMemory();
    }
    ctx_init(c, 1 << 20);
    c->force_slow = force_slow;
    volatile size_t i = 0;
    if (setjmp(c->jb) == 0) {
        for (; i < n; i++) {
            c->len = 0;
            put_float(c, dt->fmt, load_le((const uint8_t *)buf.buf + i * (size_t)width, width));
            PyObject *s = PyUnicode_FromStringAndSize(c->out, (Py_ssize_t)c->len);
            if (!s) break;
            PyList_SET_ITEM(list, (Py_ssize_t)i, s);
        }
    } else {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(list, (Py_ssize_t)i, Py_None);
        for (i = i + 1; i < n; i++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(list, (Py_ssize_t)i, Py_None);
        }
    }
    ctx_free(c);
    free(c);
    PyBuffer_Release(&buf);
    if (PyErr_Occurred()) {
        Py_DECREF(list);
        return NULL;
    }
    return list;
}

static char *dup_utf8(PyObject *s, size_t *len) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return NULL;
    char *d = (char *)malloc((size_t)n + 1);
    if (!d) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(d, u, (size_t)n + 1);
    if (len) *len = (size_t)n;
    return d;
}

static int kind_of(const char *s) {
    if (!strcmp(s, "float")) return K_FLOAT;
    if (!strcmp(s, "int")) return K_INT;
    if (!strcmp(s, "uint")) return K_UINT;
    if (!strcmp(s, "bool")) return K_BOOL;
    if (!strcmp(s, "string")) return K_STRING;
    return K_NONE;
}

static int storage_of(const char *s) {
    for (int i = 1; i < 8; i++)
        if (!strcmp(s, FIELD_NAMES[i])) return i;
    return S_NONE;
}

static int fmt_of(const char *s) {
    if (!strcmp(s, "fp16")) return F_FP16;
    if (!strcmp(s, "bf16")) return F_BF16;
    if (!strcmp(s, "fp32")) return F_FP32;
    if (!strcmp(s, "fp64")) return F_FP64;
    if (!strcmp(s, "fp8e4m3fn")) return F_FP8E4M3;
    if (!strcmp(s, "fp8e5m2")) return F_FP8E5M2;
    return F_NONE;
}

/* Whether this module prints a dtype the way printer.py does. */
static int supported(const DType *d) {
    switch (d->kind) {
    case K_FLOAT:
        switch (d->fmt) {
        case F_FP16: case F_BF16: return d->bits == 16 && d->storage == S_BYTES;
        case F_FP32: return d->bits == 32 && d->storage == S_FLOATS;
        case F_FP64: return d->bits == 64 && d->storage == S_DOUBLES;
        case F_FP8E4M3: case F_FP8E5M2: return d->bits == 8 && d->storage == S_BYTES && g_fp8[d->fmt == F_FP8E5M2].ready;
        default: return 0;
        }
    case K_INT:
    case K_UINT:
        if (d->storage == S_BYTES) return (d->bits >= 1 && d->bits < 8) || d->bits == 8 || d->bits == 16 || d->bits == 32 || d->bits == 64;
        if (d->storage == S_INTS) return d->bits == 8 || d->bits == 16 || d->bits == 32;
        if (d->storage == S_LONGINTS) return d->bits == 64;
        return 0;
    case K_BOOL:
        return d->storage == S_BOOLS;
    case K_STRING:
        return d->storage == S_STRINGS && !strcmp(d->name, "string");
    default:
        return d->storage == S_NONE;
    }
}

static void build_fp8(Fp8Table *t) {
    /* stable ascending order of the finite values (insertion sort keeps equal values in code order) */
    int n = 0;
    t->pos_inf = t->neg_inf = -1;
    for (int code = 0; code < 256; code++) {
        double v = (double)t->value[code];
        if (isnan(v)) continue;
        if (isinf(v)) {
            if (v > 0 && t->pos_inf < 0) t->pos_inf = code;
            if (v < 0 && t->neg_inf < 0) t->neg_inf = code;
        }
        int j = n;
        while (j > 0 && t->sorted[j - 1] > v) {
            t->sorted[j] = t->sorted[j - 1];
            t->codes[j] = t->codes[j - 1];
            j--;
        }
        t->sorted[j] = v;
        t->codes[j] = (uint8_t)code;
        n++;
    }
    t->nsorted = n;
    t->ready = n >= 2;
}

/* configure(dtypes, keywords, inline_limit, default_weight_file, canonical_nan, fp8_tables,
 *           default_for_kind, quote, indent) */
static PyObject *py_configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *dtypes, *keywords, *canon, *fp8, *defaults, *quote, *weight, *indent;
    unsigned long long limit;
    if (!PyArg_ParseTuple(args, "OOKUO!O!O!OU:configure", &dtypes, &keywords, &limit, &weight,
                          &PyDict_Type, &canon, &PyDict_Type, &fp8, &PyDict_Type, &defaults, &quote,
                          &indent))
        return NULL;
    g_configured = 0;
    memset(g_dt, 0, sizeof(g_dt));
    memset(g_fp8, 0, sizeof(g_fp8));
    for (int i = 0; i < KW_SLOTS; i++) {
        free(g_kw[i]);
        g_kw[i] = NULL;
    }

    /* fp8 value tables */
    static const char *const fp8names[2] = {"fp8e4m3fn", "fp8e5m2"};
    for (int i = 0; i < 2; i++) {
        PyObject *tb = PyDict_GetItemString(fp8, fp8names[i]);
        if (!tb) continue;
        Py_buffer b;
        if (PyObject_GetBuffer(tb, &b, PyBUF_SIMPLE) < 0) return NULL;
        if (b.len == 256 * 4) {
            for (int k = 0; k < 256; k++) {
                uint32_t u = (uint32_t)load_le((const uint8_t *)b.buf + 4 * k, 4);
                g_fp8[i].value[k] = bits_float(u);
            }
            build_fp8(&g_fp8[i]);
        }
        PyBuffer_Release(&b);
    }

    PyObject *seq = PySequence_Fast(dtypes, "dtypes must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        long code;
        const char *name, *kind, *storage;
        int bits;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "lsiss", &code, &name, &bits, &kind, &storage)) {
            Py_DECREF(seq);
            return NULL;
        }
        if (code < 0 || code > 255 || strlen(name) >= sizeof(g_dt[0].name)) continue;
        DType *d = &g_dt[code];
        strcpy(d->name, name);
        d->namelen = strlen(name);
        d->bits = bits;
        d->kind = kind_of(kind);
        d->storage = storage_of(storage);
        d->fmt = d->kind == K_FLOAT ? fmt_of(name) : F_NONE;
        d->is_fp32 = !strcmp(name, "fp32");
        PyObject *dk = PyDict_GetItemString(defaults, kind);
        d->bare_default = dk && PyUnicode_Check(dk) && PyUnicode_CompareWithASCIIString(dk, name) == 0;
        PyObject *cn = PyDict_GetItemString(canon, name);
        if (cn) {
            d->canonical_nan = PyLong_AsUnsignedLongLong(cn);
            if (PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
        }
        d->known = supported(d) && (d->kind != K_FLOAT || cn != NULL);
    }
    Py_DECREF(seq);
    for (int i = 0; i < 256; i++) {
        if (g_dt[i].fmt == F_FP8E4M3) g_fp8[0].canonical = (uint8_t)g_dt[i].canonical_nan;
        if (g_dt[i].fmt == F_FP8E5M2) g_fp8[1].canonical = (uint8_t)g_dt[i].canonical_nan;
    }
    /* the float formats look up their canonical NaNs by code */
    if (!(g_dt[10].fmt == F_FP16 && g_dt[11].fmt == F_FP32 && g_dt[12].fmt == F_FP64 && g_dt[13].fmt == F_BF16)) {
        for (int i = 0; i < 256; i++)
            if (g_dt[i].kind == K_FLOAT) g_dt[i].known = 0;
    }
    memset(g_storage_dt, 0, sizeof(g_storage_dt));
    static const char *const storage_dtype[8] = {NULL, "fp32", "int32", "bool", NULL, "int64", "fp64", NULL};
    for (int i = 0; i < 8; i++) {
        if (!storage_dtype[i]) continue;
        int code = dtype_by_name(storage_dtype[i]);
        if (code >= 0 && g_dt[code].storage == i) g_storage_dt[i] = &g_dt[code];
    }

    PyObject *it = PyObject_GetIter(keywords);
    if (!it) return NULL;
    PyObject *kw;
    int count = 0;
    while ((kw = PyIter_Next(it))) {
        size_t len;
        char *s = PyUnicode_Check(kw) ? dup_utf8(kw, &len) : NULL;
        Py_DECREF(kw);
        if (!s || ++count > KW_SLOTS / 2) {
            free(s);
            Py_DECREF(it);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad keywords");
            return NULL;
        }
        uint32_t h = fnv((const uint8_t *)s, len) & (KW_SLOTS - 1);
        while (g_kw[h]) h = (h + 1) & (KW_SLOTS - 1);
        g_kw[h] = s;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;

    free(g_weight_file);
    g_weight_file = dup_utf8(weight, &g_weight_file_len);
    if (!g_weight_file) return NULL;
    free(g_indent);
    g_indent = dup_utf8(indent, &g_indent_len);
    if (!g_indent) return NULL;
    Py_INCREF(quote);
    Py_XSETREF(g_quote, quote);
    g_inline_limit = limit;
    g_configured = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"program_text", py_program_text, METH_VARARGS,
     "program_text(data, input_orders) -> str | None: the canonical text of a serialized MIL "
     "Program, or None where the Python printer must do it."},
    {"format_floats", py_format_floats, METH_VARARGS,
     "format_floats(dtype, raw, force_slow=False) -> list: lexemes.format_floats of raw "
     "little-endian bit patterns (for tests)."},
    {"configure", py_configure, METH_VARARGS, "configure(...): the tables that live in Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastprint",
    "Serialized MIL Program -> canonical miltext text, in C (see miltext.text.mil.fastprint).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastprint(void) {
    init_char_classes();
    return PyModule_Create(&module);
}

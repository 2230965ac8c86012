/*
 * miltext.proto._fastencode: miltext's object model (miltext.ir) -> the bytes of
 * encode.program_to_proto(program).SerializeToString(deterministic=True), written straight from
 * the Python objects without building a protobuf message.
 *
 * encode.py is the reference. This module returns None for anything it does not handle exactly
 * the same way: a type that is not exactly the expected one (no subclasses, no numpy scalars, a
 * list where a tuple is expected, ...), ints out of their field's range, strings that are not
 * valid UTF-8, Elided values, unknown sentinels or dtype names, numeric arrays that are not 1-d,
 * C-contiguous and of the field's own element type, nesting deeper than MAX_DEPTH messages
 * (which also stops cycles), output beyond MAX_OUT. The caller then takes the Python path,
 * which gives the bytes or raises the proper error.
 *
 * The output is written back to front (as upb does), so a submessage's length is known when its
 * tag and length are written: fields in reverse field-number order, repeated fields and sorted
 * map entries in reverse. Wire format details, as upb's deterministic encoder writes them:
 *  - proto3 scalars are left out at their default (0, "", false), except oneof members, which
 *    are written whenever their case is set (Binding.name = "" is `0a 00`);
 *  - a submessage is written (possibly as tag + length 0) exactly where encode.py creates it:
 *    SetInParent, `.add()`, a map lookup, assigning one of its fields;
 *  - map entries are sorted by key bytes as upb sorts them (memcmp over the common prefix, then
 *    the longer key first) and always hold both key (1) and value (2), even when empty;
 *  - repeated numeric fields are packed; negative int32/int64 are 10-byte varints; floats are
 *    their little-endian bits.
 *
 * The IR classes, sentinels, numpy.ndarray and the dtype-name table are handed over once by
 * configure(). Attributes are read with PyObject_GetAttr on interned names; every reference
 * taken is released on every path, and nothing here runs Python code of the object graph.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64                       /* message nesting; upb reads up to 100 */
#define MAX_OUT ((size_t)0x7FFFFFFF)       /* protobuf's 2 GiB message limit */
#define MAP_STACK 16

/* ---- configuration ----------------------------------------------------------------------- */

enum {
    C_PROGRAM, C_FUNCTION, C_BLOCK, C_OPERATION, C_VAR,
    C_TENSOR_TYPE, C_LIST_TYPE, C_TUPLE_TYPE, C_DICT_TYPE, C_STATE_TYPE, C_UNKNOWN_TYPE,
    C_VALUE, C_TENSOR_DATA, C_TUPLE_DATA, C_LIST_DATA, C_DICT_DATA, C_BLOB, C_EMPTY_IMMEDIATE,
    C_NDARRAY, N_CLASSES
};
static const char *const CLASS_NAMES[N_CLASSES] = {
    "Program", "Function", "Block", "Operation", "Var",
    "TensorType", "ListType", "TupleType", "DictType", "StateType", "UnknownType",
    "Value", "TensorData", "TupleData", "ListData", "DictData", "Blob", "EmptyImmediate",
    "ndarray",
};
static PyTypeObject *g_cls[N_CLASSES];
static PyObject *g_missing, *g_unset_dim, *g_variadic;
static PyObject *g_dtype_codes;            /* dtype name (and alias) -> proto code */
static int g_configured = 0;

#define IS(o, k) (Py_TYPE(o) == g_cls[k])

enum {
    A_FUNCTIONS, A_VERSION, A_DOC, A_ATTRIBUTES, A_INPUTS, A_OPSET, A_BLOCKS, A_OUTPUTS,
    A_OPERATIONS, A_TYPE, A_NAME, A_DTYPE, A_SHAPE, A_RANK, A_ELEMENT, A_LENGTH, A_TYPES, A_KEY,
    A_VALUE, A_WRAPPED, A_DATA, A_FIELD, A_VALUES, A_ITEMS, A_OFFSET, A_FILE, N_ATTRS
};
static const char *const ATTR_NAMES[N_ATTRS] = {
    "functions", "version", "doc", "attributes", "inputs", "opset", "blocks", "outputs",
    "operations", "type", "name", "dtype", "shape", "rank", "element", "length", "types", "key",
    "value", "wrapped", "data", "field", "values", "items", "offset", "file",
};
static PyObject *g_attr[N_ATTRS];

/* TensorValue's oneof, in field-number order (values.FIELDS) */
static const char *const TENSOR_FIELDS[7] = {"floats", "ints", "bools", "strings", "longInts",
                                             "doubles", "bytes"};
enum { F_FLOATS = 1, F_INTS, F_BOOLS, F_STRINGS, F_LONGINTS, F_DOUBLES, F_BYTES };

static int little_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* ---- the output, written back to front --------------------------------------------------- */

typedef struct {
    uint8_t *buf;      /* the bytes so far are buf[cap - len, cap) */
    size_t len, cap;
    int depth;
} Enc;

static int grow(Enc *e, size_t n) {
    if (n > MAX_OUT - e->len) return -1;
    size_t need = e->len + n;
    size_t cap = e->cap ? e->cap : 1u << 16;
    while (cap < need) cap = cap > MAX_OUT / 2 ? MAX_OUT : cap * 2;
    uint8_t *nb = (uint8_t *)malloc(cap);
    if (!nb) return -1;
    if (e->len) memcpy(nb + cap - e->len, e->buf + e->cap - e->len, e->len);
    free(e->buf);
    e->buf = nb;
    e->cap = cap;
    return 0;
}

static inline uint8_t *reserve(Enc *e, size_t n) {
    if (e->cap - e->len < n && grow(e, n) < 0) return NULL;
    e->len += n;
    return e->buf + e->cap - e->len;
}

static int put_raw(Enc *e, const void *p, size_t n) {
    if (n == 0) return 0;
    uint8_t *dst = reserve(e, n);
    if (!dst) return -1;
    memcpy(dst, p, n);
    return 0;
}

static int put_varint(Enc *e, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t b = (uint8_t)(v & 0x7F);
        v >>= 7;
        tmp[n++] = (uint8_t)(b | (v ? 0x80 : 0));
    } while (v);
    return put_raw(e, tmp, n);
}

/* a length-delimited field whose payload is the last `start`..now bytes: length, then tag */
static int close_field(Enc *e, uint32_t field, size_t start) {
    if (put_varint(e, e->len - start) < 0) return -1;
    return put_varint(e, (uint64_t)field << 3 | 2);
}

static int put_varint_field(Enc *e, uint32_t field, uint64_t v) {
    if (put_varint(e, v) < 0) return -1;
    return put_varint(e, (uint64_t)field << 3);
}

/* A str field; `keep_empty` for oneof members and repeated elements. */
static int put_str(Enc *e, uint32_t field, PyObject *s, int keep_empty) {
    if (!PyUnicode_CheckExact(s)) return -1;
    Py_ssize_t n;
    const char *p = PyUnicode_AsUTF8AndSize(s, &n);   /* fails on surrogates */
    if (!p) return -1;
    if (n == 0 && !keep_empty) return 0;
    size_t start = e->len;
    if (put_raw(e, p, (size_t)n) < 0) return -1;
    return close_field(e, field, start);
}

static int get_int64(PyObject *o, int64_t *out) {
    if (!PyLong_CheckExact(o)) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) return -1;
    *out = (int64_t)v;
    return 0;
}

static int get_uint64(PyObject *o, uint64_t *out) {
    if (!PyLong_CheckExact(o)) return -1;
    unsigned long long v = PyLong_AsUnsignedLongLong(o);   /* OverflowError when negative */
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = (uint64_t)v;
    return 0;
}

/* ---- generic message structure ----------------------------------------------------------- */

typedef int (*EncFn)(Enc *, PyObject *);

/* Submessage `field` holding fn(o); left out when empty unless `always` (present but empty). */
static int sub(Enc *e, uint32_t field, EncFn fn, PyObject *o, int always) {
    if (++e->depth > MAX_DEPTH) return -1;
    size_t start = e->len;
    if (fn(e, o) < 0) return -1;
    e->depth--;
    if (e->len == start && !always) return 0;
    return close_field(e, field, start);
}

/* A repeated message field from an exact list, every element written. */
static int rep(Enc *e, uint32_t field, PyObject *list, EncFn fn) {
    if (!PyList_CheckExact(list)) return -1;
    for (Py_ssize_t i = PyList_GET_SIZE(list); i-- > 0;) {
        if (i >= PyList_GET_SIZE(list)) return -1;
        PyObject *item = PyList_GET_ITEM(list, i);
        Py_INCREF(item);
        int r = sub(e, field, fn, item, 1);
        Py_DECREF(item);
        if (r < 0) return -1;
    }
    return 0;
}

typedef struct {
    const char *k;
    Py_ssize_t n;
    PyObject *key, *val;
} MapEnt;

/* upb's deterministic order: common prefix by memcmp, then the longer key first */
static int map_cmp(const void *pa, const void *pb) {
    const MapEnt *a = (const MapEnt *)pa, *b = (const MapEnt *)pb;
    size_t common = (size_t)(a->n < b->n ? a->n : b->n);
    int c = common ? memcmp(a->k, b->k, common) : 0;
    if (c) return c;
    return (a->n < b->n) - (a->n > b->n);
}

/* A map<string, message> field from an exact dict with exact str keys (or any empty dict,
   such as the shared read-only one of a type without attributes). */
static int map_field(Enc *e, uint32_t field, PyObject *dict, EncFn fn) {
    if (!PyDict_Check(dict)) return -1;
    Py_ssize_t n = PyDict_GET_SIZE(dict);
    if (n == 0) return 0;
    if (!PyDict_CheckExact(dict)) return -1;
    MapEnt stack[MAP_STACK];
    MapEnt *ents = stack;
    if (n > MAP_STACK) {
        if ((size_t)n > SIZE_MAX / sizeof(MapEnt)) return -1;
        ents = (MapEnt *)malloc((size_t)n * sizeof(MapEnt));
        if (!ents) return -1;
    }
    Py_ssize_t pos = 0, count = 0;
    PyObject *key, *val;
    int r = -1;
    while (count < n && PyDict_Next(dict, &pos, &key, &val)) {
        Py_INCREF(key);
        Py_INCREF(val);
        ents[count].key = key;
        ents[count].val = val;
        count++;
        if (!PyUnicode_CheckExact(key)) goto done;
        ents[count - 1].k = PyUnicode_AsUTF8AndSize(key, &ents[count - 1].n);
        if (!ents[count - 1].k) goto done;
    }
    if (count != n) goto done;
    qsort(ents, (size_t)count, sizeof(MapEnt), map_cmp);
    if (++e->depth > MAX_DEPTH) goto done;   /* the entry is a message level of its own */
    for (Py_ssize_t i = count; i-- > 0;) {
        size_t start = e->len;
        if (sub(e, 2, fn, ents[i].val, 1) < 0) goto done;
        size_t kstart = e->len;
        if (put_raw(e, ents[i].k, (size_t)ents[i].n) < 0 || close_field(e, 1, kstart) < 0) goto done;
        if (close_field(e, field, start) < 0) goto done;
    }
    e->depth--;
    r = 0;
done:
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_DECREF(ents[i].key);
        Py_DECREF(ents[i].val);
    }
    if (ents != stack) free(ents);
    return r;
}

/* ---- values -------------------------------------------------------------------------------- */

static int enc_value(Enc *e, PyObject *v);
static int enc_value_type(Enc *e, PyObject *t);

static int value_map(Enc *e, uint32_t field, PyObject *dict) {
    return map_field(e, field, dict, enc_value);
}

/* a repeated or packed numeric TensorValue field's content: values (1), packed */
static int enc_numeric(Enc *e, int which, PyObject *values) {
    if (!IS(values, C_NDARRAY) || !little_endian()) return -1;
    Py_buffer b;
    if (PyObject_GetBuffer(values, &b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    int r = -1;
    const char *f = b.format ? b.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (b.ndim != 1 || !f[0] || f[1] || b.itemsize <= 0 || b.len % b.itemsize) goto done;
    const uint8_t *p = (const uint8_t *)b.buf;
    Py_ssize_t n = b.len / b.itemsize;
    char c = f[0];
    size_t start = e->len;
    switch (which) {
    case F_FLOATS:
    case F_DOUBLES:
        if (c != (which == F_FLOATS ? 'f' : 'd') || b.itemsize != (which == F_FLOATS ? 4 : 8)) goto done;
        if (put_raw(e, p, (size_t)b.len) < 0) goto done;
        break;
    case F_INTS:
    case F_LONGINTS:
        if (!(c == 'i' || c == 'l' || c == 'q') || b.itemsize != (which == F_INTS ? 4 : 8)) goto done;
        for (Py_ssize_t i = n; i-- > 0;) {
            int64_t x;
            if (which == F_INTS) {
                int32_t y;
                memcpy(&y, p + 4 * i, 4);
                x = y;
            } else {
                memcpy(&x, p + 8 * i, 8);
            }
            if (put_varint(e, (uint64_t)x) < 0) goto done;
        }
        break;
    case F_BOOLS: {
        if (c != '?' || b.itemsize != 1) goto done;
        if (n == 0) break;
        uint8_t *dst = reserve(e, (size_t)n);
        if (!dst) goto done;
        for (Py_ssize_t i = 0; i < n; i++) dst[i] = p[i] != 0;
        break;
    }
    default:
        goto done;
    }
    if (e->len > start && close_field(e, 1, start) < 0) goto done;
    r = 0;
done:
    PyBuffer_Release(&b);
    return r;
}

static int enc_strings(Enc *e, PyObject *list) {
    if (!PyList_CheckExact(list)) return -1;
    for (Py_ssize_t i = PyList_GET_SIZE(list); i-- > 0;) {
        if (i >= PyList_GET_SIZE(list)) return -1;
        PyObject *s = PyList_GET_ITEM(list, i);
        Py_INCREF(s);
        int r = put_str(e, 1, s, 1);
        Py_DECREF(s);
        if (r < 0) return -1;
    }
    return 0;
}

/* TensorValue content: the one field TensorData names, present even when empty */
static int enc_tensor_data(Enc *e, PyObject *d) {
    PyObject *field = NULL, *values = NULL;
    int r = -1;
    if (!(field = PyObject_GetAttr(d, g_attr[A_FIELD]))) goto done;
    if (field == Py_None) {
        r = 0;
        goto done;
    }
    if (!PyUnicode_CheckExact(field)) goto done;
    const char *name = PyUnicode_AsUTF8(field);
    if (!name) goto done;
    int which = 0;
    for (int i = 0; i < 7; i++)
        if (!strcmp(name, TENSOR_FIELDS[i])) which = i + 1;
    if (!which || (size_t)PyUnicode_GET_LENGTH(field) != strlen(name)) goto done;
    if (!(values = PyObject_GetAttr(d, g_attr[A_VALUES]))) goto done;
    if (++e->depth > MAX_DEPTH) goto done;
    size_t start = e->len;
    if (which == F_BYTES) {
        if (!PyBytes_CheckExact(values)) goto done;
        Py_ssize_t n = PyBytes_GET_SIZE(values);
        if (n) {
            if (put_raw(e, PyBytes_AS_STRING(values), (size_t)n) < 0 || close_field(e, 1, start) < 0) goto done;
        }
    } else if (which == F_STRINGS) {
        if (enc_strings(e, values) < 0) goto done;
    } else if (enc_numeric(e, which, values) < 0) {
        goto done;
    }
    e->depth--;
    if (close_field(e, (uint32_t)which, start) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(field);
    Py_XDECREF(values);
    return r;
}

/* TupleValue / ListValue content: values (1), every one written */
static int enc_value_list(Enc *e, PyObject *data) {
    PyObject *values = PyObject_GetAttr(data, g_attr[A_VALUES]);
    if (!values) return -1;
    int r = rep(e, 1, values, enc_value);
    Py_DECREF(values);
    return r;
}

/* KeyValuePair content from a (key Value | None, value Value | None) tuple */
static int enc_pair(Enc *e, PyObject *pair) {
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) return -1;
    PyObject *key = PyTuple_GET_ITEM(pair, 0), *val = PyTuple_GET_ITEM(pair, 1);
    if (val != Py_None && sub(e, 2, enc_value, val, 0) < 0) return -1;
    if (key != Py_None && sub(e, 1, enc_value, key, 0) < 0) return -1;
    return 0;
}

static int enc_dict_data(Enc *e, PyObject *data) {
    PyObject *items = PyObject_GetAttr(data, g_attr[A_ITEMS]);
    if (!items) return -1;
    int r = rep(e, 1, items, enc_pair);
    Py_DECREF(items);
    return r;
}

/* ImmediateValue content */
static int enc_immediate(Enc *e, PyObject *data) {
    if (IS(data, C_TENSOR_DATA)) return sub(e, 1, enc_tensor_data, data, 1);
    if (IS(data, C_TUPLE_DATA)) return sub(e, 2, enc_value_list, data, 1);
    if (IS(data, C_LIST_DATA)) return sub(e, 3, enc_value_list, data, 1);
    if (IS(data, C_DICT_DATA)) return sub(e, 4, enc_dict_data, data, 1);
    if (IS(data, C_EMPTY_IMMEDIATE)) return 0;
    return -1;
}

/* BlobFileValue content: fileName (1), offset (2) */
static int enc_blob(Enc *e, PyObject *blob) {
    PyObject *offset = NULL, *file = NULL;
    int r = -1;
    uint64_t off;
    if (!(offset = PyObject_GetAttr(blob, g_attr[A_OFFSET])) || !(file = PyObject_GetAttr(blob, g_attr[A_FILE])))
        goto done;
    if (get_uint64(offset, &off) < 0 || !PyUnicode_CheckExact(file)) goto done;
    if (off && put_varint_field(e, 2, off) < 0) goto done;
    if (put_str(e, 1, file, 0) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(offset);
    Py_XDECREF(file);
    return r;
}

/* Value content: docString (1), type (2), immediateValue (3) | blobFileValue (5) */
static int enc_value(Enc *e, PyObject *v) {
    if (!IS(v, C_VALUE)) return -1;
    PyObject *data = NULL, *type = NULL, *doc = NULL;
    int r = -1;
    if (!(data = PyObject_GetAttr(v, g_attr[A_DATA]))) goto done;
    if (data != Py_None) {
        if (IS(data, C_BLOB)) {
            if (sub(e, 5, enc_blob, data, 1) < 0) goto done;
        } else if (sub(e, 3, enc_immediate, data, 1) < 0) {
            goto done;   /* Elided and anything unknown fail in enc_immediate */
        }
    }
    if (!(type = PyObject_GetAttr(v, g_attr[A_TYPE]))) goto done;
    if (type != Py_None && sub(e, 2, enc_value_type, type, 1) < 0) goto done;
    if (!(doc = PyObject_GetAttr(v, g_attr[A_DOC]))) goto done;
    if (put_str(e, 1, doc, 0) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(data);
    Py_XDECREF(type);
    Py_XDECREF(doc);
    return r;
}

/* ---- types --------------------------------------------------------------------------------- */

/* Dimension content: constant (1) {size (1)} | unknown (2) {variadic (1)} | neither */
static int enc_dimension(Enc *e, PyObject *d) {
    if (d == g_unset_dim) return 0;
    size_t start = e->len;
    if (d == Py_None) return close_field(e, 2, start);
    if (d == g_variadic) {
        if (put_varint_field(e, 1, 1) < 0) return -1;
        return close_field(e, 2, start);
    }
    uint64_t size;
    if (get_uint64(d, &size) < 0) return -1;
    if (size && put_varint_field(e, 1, size) < 0) return -1;
    return close_field(e, 1, start);
}

static int dtype_code(PyObject *name, int64_t *code) {
    if (!PyUnicode_CheckExact(name)) return -1;
    PyObject *c = PyDict_GetItemWithError(g_dtype_codes, name);   /* borrowed */
    if (c) return get_int64(c, code);
    if (PyErr_Occurred()) return -1;
    /* dtypes.by_name: "dtypeN" for a code the table lacks */
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(name, &n);
    if (!s || n <= 5 || memcmp(s, "dtype", 5)) return -1;
    int64_t v = 0;
    int negative = s[5] == '-';  /* an open enum: a code may be negative */
    Py_ssize_t first = 5 + negative;
    if (first >= n) return -1;
    for (Py_ssize_t i = first; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
        if (v > (int64_t)INT32_MAX + negative) return -1;
    }
    *code = negative ? -v : v;
    return 0;
}

/* TensorType content: dataType (1), rank (2), dimensions (3), attributes (4) */
static int enc_tensor_type(Enc *e, PyObject *t) {
    PyObject *dtype = NULL, *shape = NULL, *rank = NULL, *attrs = NULL;
    int r = -1;
    int64_t code, rk;
    if (!(dtype = PyObject_GetAttr(t, g_attr[A_DTYPE])) || !(shape = PyObject_GetAttr(t, g_attr[A_SHAPE]))
        || !(rank = PyObject_GetAttr(t, g_attr[A_RANK])) || !(attrs = PyObject_GetAttr(t, g_attr[A_ATTRIBUTES])))
        goto done;
    if (dtype_code(dtype, &code) < 0 || !PyTuple_CheckExact(shape)) goto done;
    if (rank == Py_None) {
        rk = (int64_t)PyTuple_GET_SIZE(shape);
    } else if (get_int64(rank, &rk) < 0) {
        goto done;
    }
    if (value_map(e, 4, attrs) < 0) goto done;
    for (Py_ssize_t i = PyTuple_GET_SIZE(shape); i-- > 0;)
        if (sub(e, 3, enc_dimension, PyTuple_GET_ITEM(shape, i), 1) < 0) goto done;
    if (rk && put_varint_field(e, 2, (uint64_t)rk) < 0) goto done;
    if (code && put_varint_field(e, 1, (uint64_t)code) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    Py_XDECREF(rank);
    Py_XDECREF(attrs);
    return r;
}

/* ListType content: type (1), length (2) */
static int enc_list_type(Enc *e, PyObject *t) {
    PyObject *element = NULL, *length = NULL;
    int r = -1;
    if (!(element = PyObject_GetAttr(t, g_attr[A_ELEMENT])) || !(length = PyObject_GetAttr(t, g_attr[A_LENGTH])))
        goto done;
    if (length != g_missing && sub(e, 2, enc_dimension, length, 1) < 0) goto done;
    if (element != Py_None && sub(e, 1, enc_value_type, element, 1) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(element);
    Py_XDECREF(length);
    return r;
}

/* TupleType content: types (1), each a ValueType (None is not one) */
static int enc_tuple_type(Enc *e, PyObject *t) {
    PyObject *types = PyObject_GetAttr(t, g_attr[A_TYPES]);
    if (!types) return -1;
    int r = rep(e, 1, types, enc_value_type);
    Py_DECREF(types);
    return r;
}

/* DictionaryType content: keyType (1), valueType (2) */
static int enc_dict_type(Enc *e, PyObject *t) {
    PyObject *key = NULL, *val = NULL;
    int r = -1;
    if (!(key = PyObject_GetAttr(t, g_attr[A_KEY])) || !(val = PyObject_GetAttr(t, g_attr[A_VALUE]))) goto done;
    if (val != Py_None && sub(e, 2, enc_value_type, val, 1) < 0) goto done;
    if (key != Py_None && sub(e, 1, enc_value_type, key, 1) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(key);
    Py_XDECREF(val);
    return r;
}

/* StateType content: wrappedType (1) */
static int enc_state_type(Enc *e, PyObject *t) {
    PyObject *wrapped = PyObject_GetAttr(t, g_attr[A_WRAPPED]);
    if (!wrapped) return -1;
    int r = wrapped == Py_None ? 0 : sub(e, 1, enc_value_type, wrapped, 1);
    Py_DECREF(wrapped);
    return r;
}

/* ValueType content: one case, always set (UnknownType: none) */
static int enc_value_type(Enc *e, PyObject *t) {
    if (IS(t, C_TENSOR_TYPE)) return sub(e, 1, enc_tensor_type, t, 1);
    if (IS(t, C_LIST_TYPE)) return sub(e, 2, enc_list_type, t, 1);
    if (IS(t, C_TUPLE_TYPE)) return sub(e, 3, enc_tuple_type, t, 1);
    if (IS(t, C_DICT_TYPE)) return sub(e, 4, enc_dict_type, t, 1);
    if (IS(t, C_STATE_TYPE)) return sub(e, 5, enc_state_type, t, 1);
    if (IS(t, C_UNKNOWN_TYPE)) return 0;
    return -1;
}

/* ---- program structure --------------------------------------------------------------------- */

static int enc_block(Enc *e, PyObject *b);

/* NamedValueType content: name (1), type (2) */
static int enc_var(Enc *e, PyObject *v) {
    if (!IS(v, C_VAR)) return -1;
    PyObject *name = NULL, *type = NULL;
    int r = -1;
    if (!(name = PyObject_GetAttr(v, g_attr[A_NAME])) || !(type = PyObject_GetAttr(v, g_attr[A_TYPE]))) goto done;
    if (type != Py_None && sub(e, 2, enc_value_type, type, 1) < 0) goto done;
    if (put_str(e, 1, name, 0) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(name);
    Py_XDECREF(type);
    return r;
}

/* Argument.Binding content: name (1) | value (2) | neither (None, or a Value that sets nothing) */
static int enc_binding(Enc *e, PyObject *b) {
    if (b == Py_None) return 0;
    if (PyUnicode_CheckExact(b)) return put_str(e, 1, b, 1);
    if (IS(b, C_VALUE)) return sub(e, 2, enc_value, b, 0);
    return -1;
}

/* Argument content: arguments (1) */
static int enc_argument(Enc *e, PyObject *bindings) {
    return rep(e, 1, bindings, enc_binding);
}

/* Operation content: type (1), inputs (2), outputs (3), blocks (4), attributes (5) */
static int enc_operation(Enc *e, PyObject *op) {
    if (!IS(op, C_OPERATION)) return -1;
    PyObject *type = NULL, *inputs = NULL, *outputs = NULL, *blocks = NULL, *attrs = NULL;
    int r = -1;
    if (!(type = PyObject_GetAttr(op, g_attr[A_TYPE])) || !(inputs = PyObject_GetAttr(op, g_attr[A_INPUTS]))
        || !(outputs = PyObject_GetAttr(op, g_attr[A_OUTPUTS])) || !(blocks = PyObject_GetAttr(op, g_attr[A_BLOCKS]))
        || !(attrs = PyObject_GetAttr(op, g_attr[A_ATTRIBUTES])))
        goto done;
    if (value_map(e, 5, attrs) < 0 || rep(e, 4, blocks, enc_block) < 0 || rep(e, 3, outputs, enc_var) < 0
        || map_field(e, 2, inputs, enc_argument) < 0 || put_str(e, 1, type, 0) < 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(type);
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    Py_XDECREF(blocks);
    Py_XDECREF(attrs);
    return r;
}

/* Block content: inputs (1), outputs (2), operations (3), attributes (4) */
static int enc_block(Enc *e, PyObject *b) {
    if (!IS(b, C_BLOCK)) return -1;
    PyObject *inputs = NULL, *outputs = NULL, *ops = NULL, *attrs = NULL;
    int r = -1;
    if (!(inputs = PyObject_GetAttr(b, g_attr[A_INPUTS])) || !(outputs = PyObject_GetAttr(b, g_attr[A_OUTPUTS]))
        || !(ops = PyObject_GetAttr(b, g_attr[A_OPERATIONS])) || !(attrs = PyObject_GetAttr(b, g_attr[A_ATTRIBUTES])))
        goto done;
    if (value_map(e, 4, attrs) < 0 || rep(e, 3, ops, enc_operation) < 0) goto done;
    if (!PyList_CheckExact(outputs)) goto done;
    for (Py_ssize_t i = PyList_GET_SIZE(outputs); i-- > 0;) {
        if (i >= PyList_GET_SIZE(outputs)) goto done;
        PyObject *s = PyList_GET_ITEM(outputs, i);
        Py_INCREF(s);
        int rs = put_str(e, 2, s, 1);
        Py_DECREF(s);
        if (rs < 0) goto done;
    }
    if (rep(e, 1, inputs, enc_var) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    Py_XDECREF(ops);
    Py_XDECREF(attrs);
    return r;
}

/* Function content: inputs (1), opset (2), block_specializations (3), attributes (4) */
static int enc_function(Enc *e, PyObject *fn) {
    if (!IS(fn, C_FUNCTION)) return -1;
    PyObject *inputs = NULL, *opset = NULL, *blocks = NULL, *attrs = NULL;
    int r = -1;
    if (!(inputs = PyObject_GetAttr(fn, g_attr[A_INPUTS])) || !(opset = PyObject_GetAttr(fn, g_attr[A_OPSET]))
        || !(blocks = PyObject_GetAttr(fn, g_attr[A_BLOCKS])) || !(attrs = PyObject_GetAttr(fn, g_attr[A_ATTRIBUTES])))
        goto done;
    if (value_map(e, 4, attrs) < 0 || map_field(e, 3, blocks, enc_block) < 0 || put_str(e, 2, opset, 0) < 0
        || rep(e, 1, inputs, enc_var) < 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(inputs);
    Py_XDECREF(opset);
    Py_XDECREF(blocks);
    Py_XDECREF(attrs);
    return r;
}

/* Program content: version (1), functions (2), docString (3), attributes (4) */
static int enc_program(Enc *e, PyObject *p) {
    if (!IS(p, C_PROGRAM)) return -1;
    PyObject *functions = NULL, *version = NULL, *doc = NULL, *attrs = NULL;
    int r = -1;
    int64_t ver;
    if (!(functions = PyObject_GetAttr(p, g_attr[A_FUNCTIONS])) || !(version = PyObject_GetAttr(p, g_attr[A_VERSION]))
        || !(doc = PyObject_GetAttr(p, g_attr[A_DOC])) || !(attrs = PyObject_GetAttr(p, g_attr[A_ATTRIBUTES])))
        goto done;
    if (get_int64(version, &ver) < 0) goto done;
    if (value_map(e, 4, attrs) < 0 || put_str(e, 3, doc, 0) < 0 || map_field(e, 2, functions, enc_function) < 0)
        goto done;
    if (ver && put_varint_field(e, 1, (uint64_t)ver) < 0) goto done;
    r = 0;
done:
    Py_XDECREF(functions);
    Py_XDECREF(version);
    Py_XDECREF(doc);
    Py_XDECREF(attrs);
    return r;
}

/* ---- module -------------------------------------------------------------------------------- */

static PyObject *py_program_bytes(PyObject *self, PyObject *program) {
    (void)self;
    if (!g_configured) {
        PyErr_SetString(PyExc_RuntimeError, "_fastencode.configure() has not been called");
        return NULL;
    }
    Enc e = {NULL, 0, 0, 0};
    PyObject *result = NULL;
    if (enc_program(&e, program) == 0)
        result = PyBytes_FromStringAndSize(e.len ? (const char *)e.buf + e.cap - e.len : "", (Py_ssize_t)e.len);
    free(e.buf);
    if (result) return result;
    PyErr_Clear();   /* anything unusual: the Python path gives the bytes or the error */
    Py_RETURN_NONE;
}

static PyObject *py_configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *classes, *sentinels, *codes;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyDict_Type, &classes, &PyTuple_Type, &sentinels, &PyDict_Type, &codes))
        return NULL;
    if (PyTuple_GET_SIZE(sentinels) != 3) {
        PyErr_SetString(PyExc_ValueError, "sentinels: (MISSING, UNSET_DIM, VARIADIC)");
        return NULL;
    }
    PyTypeObject *cls[N_CLASSES];
    for (int i = 0; i < N_CLASSES; i++) {
        PyObject *c = PyDict_GetItemString(classes, CLASS_NAMES[i]);
        if (!c || !PyType_Check(c)) {
            PyErr_Format(PyExc_ValueError, "configure: no class %s", CLASS_NAMES[i]);
            return NULL;
        }
        cls[i] = (PyTypeObject *)c;
    }
    for (int i = 0; i < N_CLASSES; i++) {
        Py_INCREF(cls[i]);
        Py_XSETREF(g_cls[i], cls[i]);
    }
    PyObject *s[3];
    for (int i = 0; i < 3; i++) {
        s[i] = PyTuple_GET_ITEM(sentinels, i);
        Py_INCREF(s[i]);
    }
    Py_XSETREF(g_missing, s[0]);
    Py_XSETREF(g_unset_dim, s[1]);
    Py_XSETREF(g_variadic, s[2]);
    Py_INCREF(codes);
    Py_XSETREF(g_dtype_codes, codes);
    g_configured = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"program_bytes", py_program_bytes, METH_O,
     "program_bytes(program) -> bytes | None: encode.program_to_proto(program)"
     ".SerializeToString(deterministic=True), or None where the Python path must do it."},
    {"configure", py_configure, METH_VARARGS,
     "configure(classes, (MISSING, UNSET_DIM, VARIADIC), dtype_codes): what lives in Python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastencode",
    "miltext object model -> serialized MIL Program bytes, in C (see miltext.proto.fastencode).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastencode(void) {
    for (int i = 0; i < N_ATTRS; i++) {
        if (!g_attr[i] && !(g_attr[i] = PyUnicode_InternFromString(ATTR_NAMES[i]))) return NULL;
    }
    return PyModule_Create(&module);
}

/* finalfusion's per-call path in C: the embedding of one unknown word, as finalfusion-rust computes it.
 *
 * Each function has a pure-Python twin in lookups.py that gives the same rows and the same bits; the tests run
 * both. The float arithmetic is that of the twin, operation for operation (built with -ffp-contract=off, no
 * fused multiply-add): the rows added in order onto +0.0 in float32, the squares of the sum added in numpy's
 * pairwise order (np.add.reduce of a float32 vector: numpy/_core/src/umath/loops_utils.h.src, FLOAT_pairwise_sum,
 * over the whole vector; the reduction's -0.0 start changes no sum of squares), the square root in double
 * rounded to float32, each element divided by it in float32 when it is above zero.
 *
 * The n-grams are those of lookups.ngrams: over the code points of "<word>", for each start the longest first
 * (at most max_n and what is left of the word, so a file's max_n of 2^24 costs nothing), down to min_n. A
 * word's code points are read with PyUnicode_READ: a lone surrogate is a code point like any other.
 *
 *   ngram_rows(kind, min_n, max_n, param, offset, word: str) -> list[int]
 *       The storage rows of the word's n-grams (lookups.indexer):
 *       kind BUCKET (0): offset + (finalfusion FNV-1a-64 over u64le(char count) + u32le(each code point)
 *           & param), param the mask 2^bucket_exp - 1 (lookups._finalfusion_rows / finalfusion_hash);
 *       kind FASTTEXT (1): offset + fastText's FNV-1a-32 over the n-gram's bytes, each byte sign-extended,
 *           modulo param, the bucket count (fasttext.hashing.fasttext_hash): its UTF-8, a surrogate escape
 *           (U+DC80..U+DCFF) the byte it stands for, any other lone surrogate its 3-byte form.
 *   embedding(kind, min_n, max_n, param, offset, matrix, word: str, out) -> int
 *       ngram_rows' rows of ``matrix`` (a 2-d float32 buffer) summed and L2-normalised into ``out`` (a writable
 *       1-d float32 buffer of the matrix's width; lookups._dense_composed); the number of n-grams (0: ``out``
 *       is not written, the word has no vector).
 *   compose(matrix, rows, out) -> None
 *       The same sum and normalisation of the rows ``rows`` (a sequence of ints) of ``matrix``, or of all its
 *       rows in order when ``rows`` is None (lookups.composed: sum_rows, then _finished).
 *
 * Safe on any argument: every size is checked for overflow before it is allocated, and the rows given to compose
 * are read into a C array before anything else is done with them, so that an element's __index__ (Python code,
 * which may change the list) never runs while a size taken from the list is in use. Bad arguments raise
 * TypeError, ValueError, IndexError, OverflowError or MemoryError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#define USE_SSE /* four float32 operations at once: each one IEEE's, the same bits as one at a time */
#include <emmintrin.h>
#endif

/* the Python twins' constants (tests/test_compiled.py reads the #defines and compares) */
#define BUCKET 0
#define FASTTEXT 1

#define FNV64_OFFSET 0xCBF29CE484222325ull
#define FNV64_PRIME 0x100000001B3ull
#define FNV64_PRIME4 0x9FFAAC085635BC91ull /* FNV64_PRIME^4 mod 2^64: a code point's three zero bytes */
#define FNV32_OFFSET 2166136261u
#define FNV32_PRIME 16777619u

#define PW_BLOCKSIZE 128 /* numpy's */

/* -- buffers -------------------------------------------------------------------------------------------------- */

/* A float32 buffer of ``ndim`` dimensions (writable when asked). */
static int get_floats(PyObject *obj, Py_buffer *view, int ndim, int writable, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (view->ndim != ndim || view->itemsize != 4 || f[0] != 'f' || f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s: expected a %dd array of float32", name, ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The storage (2-d) and the vector to write (1-d, writable), or both released. */
static int get_matrix_out(PyObject *matrix_obj, PyObject *out_obj, Py_buffer *matrix, Py_buffer *out) {
    if (get_floats(matrix_obj, matrix, 2, 0, "matrix") < 0)
        return -1;
    if (get_floats(out_obj, out, 1, 1, "out") < 0) {
        PyBuffer_Release(matrix);
        return -1;
    }
    return 0;
}

static inline float load_f(const char *p) { float x; memcpy(&x, p, 4); return x; }

/* PyMem_Malloc of n items of ``item`` bytes, MemoryError when the size overflows or the allocation fails */
static void *alloc_items(Py_ssize_t n, size_t item) {
    void *p = n < 0 || (size_t)(n ? n : 1) > (size_t)PY_SSIZE_T_MAX / item ? NULL : PyMem_Malloc((n ? n : 1) * item);
    if (p == NULL)
        PyErr_NoMemory();
    return p;
}

/* -- the sum and its normalisation ---------------------------------------------------------------------------- */

/* The rows to sum, in order (checked against the matrix as they come). */
typedef struct {
    const char *base;
    Py_ssize_t rows, dim, s0, s1;
    const char **at, *local[128];
    Py_ssize_t n, cap;
} Rows;

static void rows_start(Rows *s, Py_buffer *matrix) {
    s->base = matrix->buf;
    s->rows = matrix->shape[0];
    s->dim = matrix->shape[1];
    s->s0 = matrix->strides[0];
    s->s1 = matrix->strides[1];
    s->at = s->local;
    s->n = 0;
    s->cap = 128;
}

static void rows_free(Rows *s) {
    if (s->at != s->local)
        PyMem_Free((void *)s->at);
}

static int rows_add(Rows *s, long long r) {
    if (r < 0 || r >= s->rows) {
        PyErr_Format(PyExc_IndexError, "row %lld is outside the %zd rows of the storage", r, s->rows);
        return -1;
    }
    if (s->n == s->cap) {
        const char **grown = s->cap > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(char *) ? NULL
                             : s->at == s->local ? PyMem_Malloc(2 * s->cap * sizeof(char *))
                                                 : PyMem_Realloc((void *)s->at, 2 * s->cap * sizeof(char *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (s->at == s->local)
            memcpy((void *)grown, s->local, sizeof s->local);
        s->at = grown;
        s->cap *= 2;
    }
    s->at[s->n++] = s->base + (Py_ssize_t)r * s->s0;
    return 0;
}

/* acc = +0.0 + row 0 + row 1 + ... element by element (np.add.reduce along the rows: whole rows in order); the
 * elements of a block of columns are summed over all the rows at once (the same additions, in registers) */
static void sum_rows(const Rows *s, float *acc) {
    Py_ssize_t dim = s->dim, n = s->n, j = 0;
    const char *const *at = s->at;
    if (s->s1 == 4) {
#ifdef USE_SSE
        for (; j + 16 <= dim; j += 16) {
            __m128 a0 = _mm_setzero_ps(), a1 = _mm_setzero_ps(), a2 = _mm_setzero_ps(), a3 = _mm_setzero_ps();
            for (Py_ssize_t i = 0; i < n; i++) {
                const float *row = (const float *)(at[i] + 4 * j); /* loadu: any alignment */
                a0 = _mm_add_ps(a0, _mm_loadu_ps(row));
                a1 = _mm_add_ps(a1, _mm_loadu_ps(row + 4));
                a2 = _mm_add_ps(a2, _mm_loadu_ps(row + 8));
                a3 = _mm_add_ps(a3, _mm_loadu_ps(row + 12));
            }
            _mm_storeu_ps(acc + j, a0);
            _mm_storeu_ps(acc + j + 4, a1);
            _mm_storeu_ps(acc + j + 8, a2);
            _mm_storeu_ps(acc + j + 12, a3);
        }
        for (; j + 4 <= dim; j += 4) {
            __m128 a0 = _mm_setzero_ps();
            for (Py_ssize_t i = 0; i < n; i++)
                a0 = _mm_add_ps(a0, _mm_loadu_ps((const float *)(at[i] + 4 * j)));
            _mm_storeu_ps(acc + j, a0);
        }
#endif
        for (; j < dim; j++) {
            float a = 0.0f;
            for (Py_ssize_t i = 0; i < n; i++)
                a += load_f(at[i] + 4 * j);
            acc[j] = a;
        }
        return;
    }
    for (; j < dim; j++) {
        float a = 0.0f;
        for (Py_ssize_t i = 0; i < n; i++)
            a += load_f(at[i] + j * s->s1);
        acc[j] = a;
    }
}

/* numpy's FLOAT_pairwise_sum of a contiguous vector */
static float pairwise_sum(const float *a, Py_ssize_t n) {
    if (n < 8) {
        float res = -0.0f;
        for (Py_ssize_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= PW_BLOCKSIZE) {
        float r[8];
        Py_ssize_t i;
        for (int k = 0; k < 8; k++)
            r[k] = a[k];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += a[i + k];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

/* out = the rows' sum divided by float32(sqrt(double(pairwise sum of its squares))) when that is above zero,
 * else the sum as it is */
static int rows_finish(const Rows *s, Py_buffer *out) {
    Py_ssize_t dim = s->dim, j = 0;
    if (out->shape[0] != dim) {
        PyErr_Format(PyExc_ValueError, "out: expected %zd floats, not %zd", dim, out->shape[0]);
        return -1;
    }
    float local[2 * 1024], *acc = dim <= 1024 ? local : alloc_items(dim > PY_SSIZE_T_MAX / 2 ? -1 : 2 * dim,
                                                                        sizeof(float));
    if (acc == NULL)
        return -1;
    float *sq = acc + dim;
    sum_rows(s, acc);
#ifdef USE_SSE
    for (; j + 4 <= dim; j += 4) {
        __m128 a = _mm_loadu_ps(acc + j);
        _mm_storeu_ps(sq + j, _mm_mul_ps(a, a));
    }
#endif
    for (; j < dim; j++)
        sq[j] = acc[j] * acc[j];
    float norm = (float)sqrt((double)pairwise_sum(sq, dim));
    char *o = out->buf;
    j = 0;
#ifdef USE_SSE
    if (norm > 0 && out->strides[0] == 4) {
        __m128 d = _mm_set1_ps(norm);
        for (; j + 4 <= dim; j += 4)
            _mm_storeu_ps((float *)(o + 4 * j), _mm_div_ps(_mm_loadu_ps(acc + j), d));
    }
#endif
    for (; j < dim; j++) {
        float v = norm > 0 ? acc[j] / norm : acc[j];
        memcpy(o + j * out->strides[0], &v, 4);
    }
    if (acc != local)
        PyMem_Free(acc);
    return 0;
}

/* -- n-grams -------------------------------------------------------------------------------------------------- */

typedef struct {
    long long kind, min_n, max_n, param, offset;
} Vocab;

static int vocab_check(Vocab *v) {
    if (v->kind != BUCKET && v->kind != FASTTEXT) {
        PyErr_Format(PyExc_ValueError, "kind %lld: expected 0 (bucket) or 1 (fastText)", v->kind);
        return -1;
    }
    if (v->min_n < 0 || v->offset < 0 || v->param < (v->kind == BUCKET ? 0 : 1) ||
        v->param > LLONG_MAX - v->offset) {
        PyErr_SetString(PyExc_ValueError, "min_n, offset and the mask or bucket count must be >= 0 (buckets > 0) "
                                          "and every row must fit 63 bits");
        return -1;
    }
    return 0;
}

/* The code points of "<word>"; *buf is ``local`` when they fit in it, else PyMem (the caller frees it). */
static Py_ssize_t bracketed(PyObject *word, uint32_t *local, Py_ssize_t room, uint32_t **buf) {
    if (!PyUnicode_Check(word)) {
        PyErr_Format(PyExc_TypeError, "word: expected a str, not %.100s", Py_TYPE(word)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(word) < 0)
        return -1;
#endif
    Py_ssize_t len = PyUnicode_GET_LENGTH(word);
    if (len > PY_SSIZE_T_MAX / 4 - 2) {
        PyErr_NoMemory();
        return -1;
    }
    uint32_t *cps = len + 2 <= room ? local : alloc_items(len + 2, sizeof(uint32_t));
    if (cps == NULL)
        return -1;
    int kind = PyUnicode_KIND(word);
    const void *data = PyUnicode_DATA(word);
    cps[0] = '<';
    for (Py_ssize_t i = 0; i < len; i++)
        cps[i + 1] = PyUnicode_READ(kind, data, i);
    cps[len + 1] = '>';
    *buf = cps;
    return len + 2;
}

static inline uint64_t fnv64_length(long long n) { /* the state after u64le(n) */
    uint64_t h = FNV64_OFFSET, u = (uint64_t)n;
    for (int b = 0; b < 8; b++)
        h = (h ^ ((u >> (8 * b)) & 0xFF)) * FNV64_PRIME;
    return h;
}

static inline uint64_t fnv64_char(uint64_t h, uint32_t c) { /* u32le(c); a zero byte leaves the xor as it is */
    if (c < 0x100)
        return (h ^ c) * FNV64_PRIME4;
    for (int b = 0; b < 4; b++)
        h = (h ^ ((c >> (8 * b)) & 0xFF)) * FNV64_PRIME;
    return h;
}

static inline uint32_t fnv32_byte(uint32_t h, unsigned char b) { return (h ^ (uint32_t)(int8_t)b) * FNV32_PRIME; }

static inline uint32_t fnv32_char(uint32_t h, uint32_t c) { /* its UTF-8 bytes, a surrogate's too */
    if (c >= 0xDC80 && c <= 0xDCFF) /* a surrogate escape: the byte it was decoded from */
        return fnv32_byte(h, (unsigned char)(c - 0xDC00));
    if (c < 0x80)
        return fnv32_byte(h, (unsigned char)c);
    if (c < 0x800)
        return fnv32_byte(fnv32_byte(h, 0xC0 | (c >> 6)), 0x80 | (c & 0x3F));
    if (c < 0x10000)
        return fnv32_byte(fnv32_byte(fnv32_byte(h, 0xE0 | (c >> 12)), 0x80 | ((c >> 6) & 0x3F)), 0x80 | (c & 0x3F));
    return fnv32_byte(fnv32_byte(fnv32_byte(fnv32_byte(h, 0xF0 | (c >> 18)), 0x80 | ((c >> 12) & 0x3F)),
                                 0x80 | ((c >> 6) & 0x3F)), 0x80 | (c & 0x3F));
}

/* Calls emit(ctx, row) for each n-gram's row in finalfusion's order; the number of n-grams, or -1 on error. */
typedef int (*Emit)(void *ctx, long long row);

static Py_ssize_t each_row(Vocab *v, PyObject *word, Emit emit, void *ctx) {
    uint32_t local[64], *cps;
    uint32_t hlocal[64], *prefix = hlocal; /* fastText: the hash of each prefix of the n-grams of one start */
    Py_ssize_t size = bracketed(word, local, 64, &cps), count = 0;
    if (size < 0)
        return -1;
    if (v->kind == FASTTEXT && size + 1 > 64 && (prefix = alloc_items(size + 1, sizeof(uint32_t))) == NULL) {
        prefix = hlocal;
        count = -1;
        goto done;
    }
    for (Py_ssize_t i = 0; v->min_n <= size - i; i++) {
        long long longest = size - i < v->max_n ? size - i : v->max_n;
        if (v->kind == FASTTEXT) {
            uint32_t h = FNV32_OFFSET;
            prefix[0] = h;
            for (long long n = 1; n <= longest; n++)
                prefix[n] = h = fnv32_char(h, cps[i + n - 1]);
        }
        for (long long n = longest; n >= v->min_n; n--) {
            long long row;
            if (v->kind == BUCKET) {
                uint64_t h = fnv64_length(n);
                for (long long k = 0; k < n; k++)
                    h = fnv64_char(h, cps[i + k]);
                row = v->offset + (long long)(h & (uint64_t)v->param);
            } else {
                row = v->offset + (long long)(prefix[n] % (uint64_t)v->param);
            }
            if (emit(ctx, row) < 0) {
                count = -1;
                goto done;
            }
            count++;
        }
    }
done:
    if (cps != local)
        PyMem_Free(cps);
    if (prefix != hlocal)
        PyMem_Free(prefix);
    return count;
}

/* The vocabulary arguments (the first five) of a call of ``nargs`` arguments that takes ``expected``. */
static int parse_vocab(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected, const char *usage, Vocab *v) {
    if (nargs != expected) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (((v->kind = PyLong_AsLongLong(args[0])) == -1 && PyErr_Occurred()) ||
        ((v->min_n = PyLong_AsLongLong(args[1])) == -1 && PyErr_Occurred()) ||
        ((v->max_n = PyLong_AsLongLong(args[2])) == -1 && PyErr_Occurred()) ||
        ((v->param = PyLong_AsLongLong(args[3])) == -1 && PyErr_Occurred()) ||
        ((v->offset = PyLong_AsLongLong(args[4])) == -1 && PyErr_Occurred()))
        return -1;
    return vocab_check(v);
}

static int emit_append(void *ctx, long long row) {
    PyObject *r = PyLong_FromLongLong(row);
    if (r == NULL)
        return -1;
    int rc = PyList_Append((PyObject *)ctx, r);
    Py_DECREF(r);
    return rc;
}

static PyObject *ngram_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Vocab v;
    if (parse_vocab(args, nargs, 6, "ngram_rows(kind, min_n, max_n, param, offset, word)", &v) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out != NULL && each_row(&v, args[5], emit_append, out) < 0)
        Py_CLEAR(out);
    return out;
}

static int emit_add(void *ctx, long long row) { return rows_add((Rows *)ctx, row); }

static PyObject *embedding(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Vocab v;
    if (parse_vocab(args, nargs, 8, "embedding(kind, min_n, max_n, param, offset, matrix, word, out)", &v) < 0)
        return NULL;
    Py_buffer matrix, out;
    if (get_matrix_out(args[5], args[7], &matrix, &out) < 0)
        return NULL;
    Rows s;
    rows_start(&s, &matrix);
    Py_ssize_t count = each_row(&v, args[6], emit_add, &s);
    if (count > 0 && rows_finish(&s, &out) < 0)
        count = -1;
    rows_free(&s);
    PyBuffer_Release(&matrix);
    PyBuffer_Release(&out);
    return count < 0 ? NULL : PyLong_FromSsize_t(count);
}

/* The rows to compose read into a C array (``local`` when they fit, else PyMem): any iterable of ints. An
 * element that is not an exact int runs Python code when read (its __index__), which may change a list: such a
 * list is read from a copy. The count, or -1 with an exception set. */
static Py_ssize_t read_rows(PyObject *obj, long long *local, Py_ssize_t room, long long **buf) {
    *buf = local;
    PyObject *seq = PySequence_Fast(obj, "rows: expected a sequence of ints"); /* itself, or a new list */
    if (seq == NULL)
        return -1;
    if (seq == obj && PyList_CheckExact(seq)) {
        Py_ssize_t size = PyList_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < size; i++)
            if (!PyLong_CheckExact(PyList_GET_ITEM(seq, i))) {
                Py_SETREF(seq, PyList_AsTuple(obj));
                if (seq == NULL)
                    return -1;
                break;
            }
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq); /* fixed from here on: no one else can change seq */
    long long *v = n <= room ? local : alloc_items(n, sizeof(long long));
    for (Py_ssize_t i = 0; v != NULL && i < n; i++)
        if ((v[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i))) == -1 && PyErr_Occurred()) {
            if (v != local)
                PyMem_Free(v);
            v = NULL;
        }
    Py_DECREF(seq);
    if (v == NULL)
        return -1;
    *buf = v;
    return n;
}

static PyObject *compose(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "compose(matrix, rows, out)");
        return NULL;
    }
    long long local[128], *rows = local;
    Py_ssize_t n = 0;
    if (args[1] != Py_None && (n = read_rows(args[1], local, 128, &rows)) < 0)
        return NULL;
    Py_buffer matrix, out;
    int ok = 0;
    if (get_matrix_out(args[0], args[2], &matrix, &out) < 0)
        goto release;
    Rows s;
    rows_start(&s, &matrix);
    if (args[1] == Py_None)
        n = matrix.shape[0];
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "compose: no rows to sum");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (rows_add(&s, args[1] == Py_None ? i : rows[i]) < 0)
            goto done;
    ok = rows_finish(&s, &out) == 0;
done:
    rows_free(&s);
    PyBuffer_Release(&matrix);
    PyBuffer_Release(&out);
release:
    if (rows != local)
        PyMem_Free(rows);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ngram_rows", (PyCFunction)(void (*)(void))ngram_rows, METH_FASTCALL,
     "ngram_rows(kind, min_n, max_n, param, offset, word): the storage rows of the word's n-grams."},
    {"embedding", (PyCFunction)(void (*)(void))embedding, METH_FASTCALL,
     "embedding(kind, min_n, max_n, param, offset, matrix, word, out): the word's n-gram rows of matrix, "
     "summed and L2-normalised into out; the number of n-grams (0: out not written)."},
    {"compose", (PyCFunction)(void (*)(void))compose, METH_FASTCALL,
     "compose(matrix, rows, out): the rows (all when None) of matrix summed in order and L2-normalised into out."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", "finalfusion's per-call path in C.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }

/* fastText's per-call paths in C: what one word or one line costs, as fastText's own C++ computes it.
 *
 * Each function has a pure-Python twin (subwords.one_word_ngrams, predict.Lines._hash, predict.hs_predict_one)
 * that gives the same bits; the tests run both against the fasttext module. The float arithmetic is fastText's,
 * operation for operation: float32 sums and products rounded one at a time (built with -ffp-contract=off, no
 * fused multiply-add), std::exp of a float as the C library's expf, std::log in double.
 *
 *   ngram_rows(bracketed: bytes, minn, maxn, bucket, nwords, table) -> list[int]
 *       Dictionary::computeSubwords on the bytes of "<word>", each n-gram's hash through pushHash: nwords + its
 *       bucket, or + its row in a pruned model's table (int32 per bucket, -1: pruned away).
 *   word_ngram_rows(out: list, hashes, n, bucket, nwords, table) -> None
 *       Dictionary::addWordNgrams of one line's token hashes, the rows appended to ``out`` (through pushHash).
 *   fnv1a(data: bytes) -> int
 *       Dictionary::hash (FNV-1a 32 over sign-extended bytes).
 *   pq_rows(codes, centroids, dim, dsub, lastdsub, norm_codes, norms, rows, out) -> None
 *       Rows of a product-quantized matrix as ProductQuantizer::addcode adds them (times the row's quantized
 *       norm, when there are norms), into ``out`` (one row each).
 *   mean_rows(matrix, rows, out) -> out
 *       FastText::getWordVector's (and Model::computeHidden's) mean of input rows: their float32 sum in order onto
 *       +0.0, times float(1.0 / count).
 *   mean_file_rows(matrix, rows, out, fd, first, regions) -> out
 *       mean_rows of a matrix that is a read-only map of the file ``fd``, its row 0 at byte ``first``: a row in a
 *       2 MB region of the file that ``regions`` (one byte a region, 0: not read yet) has not seen is read with
 *       pread and its region marked; other rows through the map, as is a row pread cannot read whole (the same
 *       bytes: a read-only map of the file shows what pread reads).
 *   hs_predict(matrix, rows, output, norms, children, osz, k, log_threshold) -> (list[int], list[float])
 *       Model::computeHidden over the input rows, then HierarchicalSoftmaxLoss::predict: the depth-first search
 *       with its pruning and its heap (libstdc++'s push_heap / pop_heap / sort_heap with comparePairs, so ties
 *       leave in the peer's order), the label ids best first and std::exp of their scores.
 *   flat_predict(matrix, rows, output, norms, softmax, sigmoid_table, k, threshold) -> (list[int], list[float])
 *       The same for the other losses: every label's dotRow, then SoftmaxLoss::computeOutput (exp in double of
 *       a float, the sum label after label) or BinaryLogisticLoss's (one-vs-all, negative sampling: fastText's
 *       sigmoid table), then Loss::findKBest with the same heap.
 *
 * Safe on any argument: every size is checked for overflow before it is allocated (k and counts clamped first),
 * and a sequence of ints is read into a C array (read_ints) before anything else is done with it, so that an
 * element's __index__ (Python code, which may change the sequence) never runs while a size taken from the
 * sequence is in use. Bad arguments raise TypeError, ValueError, IndexError, OverflowError or MemoryError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifndef _WIN32
#include <errno.h>
#include <unistd.h>
#endif

/* the Python twins' constants (tests/test_compiled.py reads the #defines and compares) */
#define FNV_OFFSET 2166136261u
#define FNV_PRIME 16777619u
#define WORD_NGRAM_PRIME 116049371u /* Dictionary::addWordNgrams */

/* -- buffers -------------------------------------------------------------------------------------------------- */

/* A numpy array (or any buffer) of 4-byte items, ``ndim`` dimensions, kind 'f' (float32) or 'i' (int32). */
static int get_buffer(PyObject *obj, Py_buffer *view, int ndim, char kind, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok = view->ndim == ndim && view->itemsize == 4 && f[1] == '\0' &&
             (kind == 'f' ? *f == 'f' : (*f == 'i' || (*f == 'l' && sizeof(long) == 4)));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected a %dd array of %s", name, ndim,
                     kind == 'f' ? "float32" : "int32");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static inline float load_f(const char *p) { float x; memcpy(&x, p, 4); return x; }
static inline int32_t load_i(const char *p) { int32_t x; memcpy(&x, p, 4); return x; }
static inline void store_f(char *p, float x) { memcpy(p, &x, 4); }

/* a * b for sizes (a, b >= 0); -1 when it overflows Py_ssize_t */
static inline Py_ssize_t size_mul(Py_ssize_t a, Py_ssize_t b) {
    return a != 0 && b > PY_SSIZE_T_MAX / a ? -1 : a * b;
}

/* PyMem_Malloc of n items of ``item`` bytes, MemoryError when the size overflows or the allocation fails */
static void *alloc_items(Py_ssize_t n, size_t item) {
    Py_ssize_t bytes = n < 0 ? -1 : size_mul(n ? n : 1, (Py_ssize_t)item);
    void *p = bytes < 0 ? NULL : PyMem_Malloc((size_t)bytes);
    if (p == NULL)
        PyErr_NoMemory();
    return p;
}

/* -- sequences of ints ---------------------------------------------------------------------------------------- */

/* The ints of a sequence, read into a C array once (``local`` when they fit, else PyMem: ints_free) */
typedef struct {
    long long *v, local[256];
    Py_ssize_t n;
} Ints;

static void ints_free(Ints *a) {
    if (a->v != a->local)
        PyMem_Free(a->v);
    a->v = a->local;
    a->n = 0;
}

/* Reads ``obj`` (any iterable of ints: int or __index__) into ``a``, each as int64 (``masked``: its low 64 bits,
 * as PyLong_AsUnsignedLongLongMask gives them, for hashes). An element that is not an exact int runs Python code
 * when read (its __index__), which may change a list: such a list is read from a copy. 0, or -1 with an
 * exception set (``a`` then holds nothing to free). */
static int read_ints(PyObject *obj, Ints *a, int masked, const char *name) {
    a->v = a->local;
    a->n = 0;
    PyObject *seq = PySequence_Fast(obj, name); /* the list or tuple itself, or a new list no one else holds */
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
    if (n > (Py_ssize_t)(sizeof a->local / sizeof a->local[0]) && (a->v = alloc_items(n, sizeof(long long))) == NULL) {
        a->v = a->local;
        Py_DECREF(seq);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        long long x = masked ? (long long)PyLong_AsUnsignedLongLongMask(item) : PyLong_AsLongLong(item);
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            ints_free(a);
            return -1;
        }
        a->v[i] = x;
    }
    a->n = n;
    Py_DECREF(seq);
    return 0;
}

/* -- n-grams -------------------------------------------------------------------------------------------------- */

/* Dictionary::pushHash: bucket ``id``'s input row appended to ``out`` (through a pruned model's table, which
 * drops it where it holds -1); 0, or -1 with an exception set. ``id`` and the table's rows are below 2^31:
 * nwords_ok has seen to it that nwords plus them fits in 63 bits. */
static int push_hash(PyObject *out, long long id, Py_buffer *table, long long nwords) {
    if (table != NULL) {
        if (id >= table->shape[0])
            return 0;
        id = load_i((const char *)table->buf + id * table->strides[0]);
        if (id < 0)
            return 0;
    }
    PyObject *row = PyLong_FromLongLong(nwords + id);
    if (row == NULL)
        return -1;
    int rc = PyList_Append(out, row);
    Py_DECREF(row);
    return rc;
}

/* nwords, added to rows below 2^31: ValueError unless the sums fit in int64 */
static int nwords_ok(long long nwords) {
    if (nwords < 0 || nwords > LLONG_MAX - INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "nwords must be in 0..2^63-2^31");
        return -1;
    }
    return 0;
}

static PyObject *ngram_rows(PyObject *self, PyObject *args) {
    Py_buffer word;
    long long minn, maxn, bucket, nwords;
    PyObject *table_obj;
    if (!PyArg_ParseTuple(args, "y*LLLLO", &word, &minn, &maxn, &bucket, &nwords, &table_obj))
        return NULL;
    Py_buffer table = {0};
    int pruned = table_obj != Py_None;
    if (pruned && get_buffer(table_obj, &table, 1, 'i', "table") < 0) {
        PyBuffer_Release(&word);
        return NULL;
    }
    PyObject *out = nwords_ok(nwords) < 0 ? NULL : PyList_New(0);
    if (out == NULL || maxn <= 0 || bucket <= 0 || bucket > INT32_MAX)
        goto done;
    const unsigned char *w = word.buf;
    Py_ssize_t size = word.len;
    for (Py_ssize_t i = 0; i < size; i++) {
        if ((w[i] & 0xC0) == 0x80)
            continue;
        uint32_t h = FNV_OFFSET;
        Py_ssize_t j = i;
        for (long long n = 1; j < size && n <= maxn; n++) {
            h = (h ^ (uint32_t)(int8_t)w[j++]) * FNV_PRIME;
            while (j < size && (w[j] & 0xC0) == 0x80)
                h = (h ^ (uint32_t)(int8_t)w[j++]) * FNV_PRIME;
            if (n >= minn && !(n == 1 && (i == 0 || j == size)) &&
                push_hash(out, (long long)(h % (uint32_t)bucket), pruned ? &table : NULL, nwords) < 0) {
                Py_CLEAR(out);
                goto done;
            }
        }
    }
done:
    PyBuffer_Release(&word);
    if (pruned)
        PyBuffer_Release(&table);
    return out;
}

/* Dictionary::addWordNgrams of one line's token hashes (uint32 values read as fastText's int32), each n-gram's
 * hash through pushHash, appended to ``out`` */
static PyObject *word_ngram_rows(PyObject *self, PyObject *args) {
    PyObject *out, *hashes_obj, *table_obj;
    long long n, bucket, nwords;
    if (!PyArg_ParseTuple(args, "O!OLLLO", &PyList_Type, &out, &hashes_obj, &n, &bucket, &nwords, &table_obj))
        return NULL;
    if (bucket <= 0 || bucket > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "word_ngram_rows: bucket must be in 1..2^31-1");
        return NULL;
    }
    Ints hashes;
    if (nwords_ok(nwords) < 0 || read_ints(hashes_obj, &hashes, 1, "hashes: expected a sequence of ints") < 0)
        return NULL;
    Py_buffer table = {0};
    int pruned = table_obj != Py_None;
    PyObject *result = NULL;
    if (pruned && get_buffer(table_obj, &table, 1, 'i', "table") < 0)
        goto done;
    Py_ssize_t size = hashes.n;
    for (Py_ssize_t i = 0; i < size; i++) {
        uint64_t h = (uint64_t)(int64_t)(int32_t)(uint32_t)hashes.v[i]; /* the token hash as fastText's int32 */
        for (Py_ssize_t j = i + 1; j < size && j - i < n; j++) {
            h = h * WORD_NGRAM_PRIME + (uint64_t)(int64_t)(int32_t)(uint32_t)hashes.v[j];
            if (push_hash(out, (long long)(h % (uint64_t)bucket), pruned ? &table : NULL, nwords) < 0)
                goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    ints_free(&hashes);
    if (pruned && table.obj)
        PyBuffer_Release(&table);
    return result;
}

static PyObject *fnv1a(PyObject *self, PyObject *arg) {
    Py_buffer data;
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t h = FNV_OFFSET;
    const unsigned char *p = data.buf;
    for (Py_ssize_t i = 0; i < data.len; i++)
        h = (h ^ (uint32_t)(int8_t)p[i]) * FNV_PRIME;
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(h);
}

/* -- a word's vector, a line's hidden vector ------------------------------------------------------------------ */

/* Rows of a matrix that is a read-only map of a file, read with pread where the map would be made to hold a new
 * region of the file (the kernel maps a page-cache folio a fault lands in whole: up to 2 MB for a row). */
#define REGION_BITS 21
typedef struct {
    int fd;
    long long first;        /* the file offset of the matrix's row 0 */
    unsigned char *regions; /* a byte for each 2 MB of the file up to the matrix's end: 0 until a row is read in it */
    char *row;              /* a row's bytes as read (the matrix's width in float32) */
} Reads;

/* (out of the loop that calls it: inlined, it made mean_rows' loop over mapped rows 3-5% slower) */
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define NOINLINE __declspec(noinline)
#else
#define NOINLINE
#endif

/* Row ``r`` (``row``: where the map has it): read with pread into reads->row when its first or last byte lies in a
 * region not read before (both are marked read); else, or when pread does not give it whole, the map's. */
static NOINLINE const char *read_row(Reads *reads, const char *row, long long r, Py_ssize_t stride, Py_ssize_t width) {
#ifndef _WIN32
    long long at = reads->first + r * stride; /* (reads_start checked that every row's last byte fits) */
    long long lo = at >> REGION_BITS, hi = (at + width - 1) >> REGION_BITS;
    if (reads->regions[lo] && reads->regions[hi])
        return row;
    reads->regions[lo] = reads->regions[hi] = 1;
    Py_ssize_t got = 0;
    while (got < width) {
        ssize_t n = pread(reads->fd, reads->row + got, (size_t)(width - got), (off_t)(at + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return row; /* an error or the file's end: the map's bytes, as without pread */
        got += n;
    }
    return reads->row;
#else
    (void)reads, (void)r, (void)stride, (void)width;
    return row;
#endif
}

/* The mean of matrix rows ``rows`` into ``out`` (dim floats, zeroed here), as fastText makes it
 * (Model::computeHidden, FastText::getWordVector): the rows added in order onto +0.0, then times
 * float(1.0 / count); nothing added, zeros. ``reads``: rows read as read_row says (NULL: through the map). */
static int mean_of_rows(Py_buffer *matrix, const Ints *rows, float *out, Reads *reads) {
    Py_ssize_t n = rows->n, dim = matrix->shape[1];
    for (Py_ssize_t j = 0; j < dim; j++)
        out[j] = 0.0f;
    const char *base = matrix->buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long r = rows->v[i];
        if (r < 0 || r >= matrix->shape[0]) {
            PyErr_Format(PyExc_IndexError, "row %lld is outside the %zd rows of the matrix", r, matrix->shape[0]);
            return -1;
        }
        const char *row = base + (Py_ssize_t)r * matrix->strides[0];
        if (reads != NULL && dim > 0)
            row = read_row(reads, row, r, matrix->strides[0], 4 * dim);
        for (Py_ssize_t j = 0; j < dim; j++)
            out[j] += load_f(row + j * matrix->strides[1]);
    }
    if (n > 0) {
        float scale = (float)(1.0 / (double)n);
        for (Py_ssize_t j = 0; j < dim; j++)
            out[j] *= scale;
    }
    return 0;
}

#define KSUB 256

/* Rows ``rows`` of a product-quantized matrix into the rows of ``out`` (n x dim float32, C order): row i of out
 * is row rows[i], each sub-quantizer's centroid times the row's norm (1 without quantized norms), the products
 * ProductQuantizer::addcode adds to a vector (written as they are: a -0.0 stays, as in the numpy twin). */
static PyObject *pq_rows(PyObject *self, PyObject *args) {
    Py_buffer codes, centroids, out, norm_codes = {0}, norms = {0};
    PyObject *rows_obj, *norm_codes_obj, *norms_obj, *result = NULL;
    long long dim, dsub, lastdsub;
    Ints rows = {.v = NULL};
    if (!PyArg_ParseTuple(args, "y*y*LLLOOOw*", &codes, &centroids, &dim, &dsub, &lastdsub, &norm_codes_obj,
                          &norms_obj, &rows_obj, &out))
        return NULL;
    int scaled = norms_obj != Py_None;
    if (scaled && (PyObject_GetBuffer(norm_codes_obj, &norm_codes, PyBUF_SIMPLE) < 0 ||
                   get_buffer(norms_obj, &norms, 1, 'f', "norms") < 0))
        goto done;
    /* sub-quantizers of dsub columns and a last one of lastdsub; centroids: KSUB of each, KSUB * dim floats in
     * all (dim is bounded by the centroids' bytes before anything is multiplied) */
    if (dim < 1 || dsub < 1 || lastdsub < 1 || lastdsub > dsub || dim > centroids.len / (4 * KSUB) ||
        (dim - lastdsub) % dsub != 0) {
        PyErr_SetString(PyExc_ValueError, "pq_rows: the codes, centroids and output do not agree");
        goto done;
    }
    Py_ssize_t nsubq = (Py_ssize_t)((dim - lastdsub) / dsub + 1);
    if (codes.len % nsubq != 0 || (scaled && (norms.shape[0] < KSUB || norm_codes.len < codes.len / nsubq))) {
        PyErr_SetString(PyExc_ValueError, "pq_rows: the codes, centroids and output do not agree");
        goto done;
    }
    if (read_ints(rows_obj, &rows, 0, "rows: expected a sequence of ints") < 0)
        goto done;
    Py_ssize_t n = rows.n, count = codes.len / nsubq, want = size_mul(size_mul(n, (Py_ssize_t)dim), 4);
    if (want < 0 || out.len != want) {
        PyErr_SetString(PyExc_ValueError, "pq_rows: out must hold a row of dim float32 for each row asked for");
        goto done;
    }
    const unsigned char *cd = codes.buf;
    const char *cents = centroids.buf;
    char *o = out.buf; /* (any alignment: stored with memcpy) */
    for (Py_ssize_t i = 0; i < n; i++, o += 4 * dim) {
        long long r = rows.v[i];
        if (r < 0 || r >= count) {
            PyErr_Format(PyExc_IndexError, "row %lld is outside the %zd rows of the matrix", r, count);
            goto done;
        }
        float alpha = scaled ? load_f((const char *)norms.buf +
                                      ((const unsigned char *)norm_codes.buf)[r] * norms.strides[0]) : 1.0f;
        const unsigned char *code = cd + r * nsubq;
        for (Py_ssize_t m = 0; m < nsubq; m++) { /* ProductQuantizer::get_centroids */
            int last = m == nsubq - 1;
            Py_ssize_t d = last ? lastdsub : dsub;
            const char *c = cents + 4 * (last ? m * KSUB * dsub + code[m] * lastdsub : (m * KSUB + code[m]) * dsub);
            for (Py_ssize_t j = 0; j < d; j++) /* (each column once: +0.0 + x, but -0.0 kept) */
                store_f(o + 4 * (m * dsub + j), alpha * load_f(c + 4 * j));
        }
    }
    result = Py_NewRef(Py_None);
done:
    if (rows.v)
        ints_free(&rows);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&centroids);
    PyBuffer_Release(&out);
    if (norm_codes.obj)
        PyBuffer_Release(&norm_codes);
    if (norms.obj)
        PyBuffer_Release(&norms);
    return result;
}

/* The Reads of mean_file_rows' ``fd``, ``first`` and ``regions`` over ``matrix`` (its rows of contiguous floats at a
 * positive stride), ``regions`` held writable in ``view``; 0, or -1 with an exception set. */
static int reads_start(Reads *reads, Py_buffer *view, PyObject *regions, int fd, long long first,
                       Py_buffer *matrix) {
    if (PyObject_GetBuffer(regions, view, PyBUF_WRITABLE) < 0)
        return -1;
    /* (a buffer's width, 4 x its columns, cannot overflow: its rows' bytes exist) */
    Py_ssize_t rows = matrix->shape[0], stride = matrix->strides[0], width = 4 * matrix->shape[1], span = 0;
    const char *why = NULL;
    if (fd < 0 || first < 0)
        why = "fd and first: expected a file descriptor and a file offset (>= 0)";
    else if (rows > 0 && width > 0) {
        /* the file offset of the last row's last byte, first + (rows - 1) * stride + width - 1, each step checked */
        if (matrix->strides[1] != 4 || stride < width)
            why = "matrix: rows of contiguous floats are read from the file (strides (>= 4 x width, 4))";
        else if ((span = size_mul(rows - 1, stride)) < 0 || span > PY_SSIZE_T_MAX - width ||
                 first > PY_SSIZE_T_MAX - (span + width))
            why = "first: the matrix's rows would end past the largest file offset";
        else if (((first + span + width - 1) >> REGION_BITS) >= view->len)
            why = "regions: expected a byte for each 2 MB region of the file up to the matrix's end";
    }
    if (why != NULL) {
        PyErr_SetString(PyExc_ValueError, why);
        PyBuffer_Release(view);
        return -1;
    }
    reads->fd = fd;
    reads->first = first;
    reads->regions = view->buf;
    reads->row = NULL;
    return 0;
}

/* mean_rows and mean_file_rows: the mean of ``rows_obj``'s rows of ``matrix_obj`` into ``out_obj``, read as
 * mean_of_rows reads them (``regions_obj`` NULL: through the map; else with ``fd`` and ``first``, see read_row). */
static PyObject *mean_into(PyObject *matrix_obj, PyObject *rows_obj, PyObject *out_obj, int fd, long long first,
                           PyObject *regions_obj, float *row) {
    Ints rows;
    if (read_ints(rows_obj, &rows, 0, "rows: expected a sequence of ints") < 0)
        return NULL;
    Py_buffer matrix, out, regions;
    Reads reads, *with = NULL;
    PyObject *result = NULL;
    if (get_buffer(matrix_obj, &matrix, 2, 'f', "matrix") < 0) {
        ints_free(&rows);
        return NULL;
    }
    if (regions_obj != NULL) {
        if (reads_start(&reads, &regions, regions_obj, fd, first, &matrix) < 0)
            goto release;
        with = &reads;
    }
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        goto release;
    float local[1024], *sums = matrix.shape[1] <= 1024 ? local : alloc_items(matrix.shape[1], sizeof(float));
    if (with != NULL)
        reads.row = (char *)(matrix.shape[1] <= 1024 ? row : alloc_items(matrix.shape[1], sizeof(float)));
    if (out.itemsize != 4 || out.len != size_mul(matrix.shape[1], 4) || out.format == NULL ||
        strcmp(out.format + (*out.format == '<' || *out.format == '=' || *out.format == '@'), "f") != 0) {
        PyErr_SetString(PyExc_TypeError, "out: expected a contiguous float32 array of the matrix's width");
    } else if (sums != NULL && (with == NULL || reads.row != NULL) && mean_of_rows(&matrix, &rows, sums, with) == 0) {
        memcpy(out.buf, sums, 4 * matrix.shape[1]); /* (out at any alignment) */
        result = Py_NewRef(out_obj);
    }
    if (sums != local)
        PyMem_Free(sums);
    if (with != NULL && reads.row != (char *)row)
        PyMem_Free(reads.row);
    PyBuffer_Release(&out);
release:
    if (with != NULL)
        PyBuffer_Release(&regions);
    PyBuffer_Release(&matrix);
    ints_free(&rows);
    return result;
}

static PyObject *mean_rows(PyObject *self, PyObject *args) {
    PyObject *matrix_obj, *rows_obj, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO", &matrix_obj, &rows_obj, &out_obj))
        return NULL;
    return mean_into(matrix_obj, rows_obj, out_obj, -1, 0, NULL, NULL);
}

static PyObject *mean_file_rows(PyObject *self, PyObject *args) {
    PyObject *matrix_obj, *rows_obj, *out_obj, *regions_obj;
    int fd;
    long long first;
    if (!PyArg_ParseTuple(args, "OOOiLO", &matrix_obj, &rows_obj, &out_obj, &fd, &first, &regions_obj))
        return NULL;
    float row[1024]; /* a row read with pread, when the matrix is at most 1024 wide */
    return mean_into(matrix_obj, rows_obj, out_obj, fd, first, regions_obj, row);
}

/* -- hierarchical softmax ------------------------------------------------------------------------------------- */

typedef struct {
    float score;
    int32_t id;
} Pred;

static inline int comes_after(Pred a, Pred b) { return a.score > b.score; } /* comparePairs */

static void sift_up(Pred *heap, Py_ssize_t hole, Py_ssize_t top, Pred value) { /* std::__push_heap */
    Py_ssize_t parent = (hole - 1) / 2;
    while (hole > top && comes_after(heap[parent], value)) {
        heap[hole] = heap[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    heap[hole] = value;
}

static void pop_heap(Pred *heap, Py_ssize_t n) { /* std::pop_heap over heap[0:n]: the top goes to n - 1 */
    Pred value = heap[n - 1];
    heap[n - 1] = heap[0];
    Py_ssize_t hole = 0, len = n - 1, child = 0;
    while (child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (comes_after(heap[child], heap[child - 1]))
            child--;
        heap[hole] = heap[child];
        hole = child;
    }
    if ((len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        heap[hole] = heap[child - 1];
        hole = child - 1;
    }
    sift_up(heap, hole, 0, value);
}

static inline float std_log(float x) { return (float)log((double)x + 1e-5); } /* Loss::std_log */

/* std::sort_heap (best first), then (label ids, std::exp of their scores) as the Python module gives them */
static PyObject *sorted_predictions(Pred *heap, Py_ssize_t size) {
    for (Py_ssize_t m = size; m > 1; m--)
        pop_heap(heap, m);
    PyObject *ids = PyList_New(size), *probs = PyList_New(size);
    if (ids == NULL || probs == NULL) {
        Py_XDECREF(ids);
        Py_XDECREF(probs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *id = PyLong_FromLong(heap[i].id), *p = PyFloat_FromDouble((double)expf(heap[i].score));
        PyList_SET_ITEM(ids, i, id);
        PyList_SET_ITEM(probs, i, p);
        if (id == NULL || p == NULL) {
            Py_DECREF(ids);
            Py_DECREF(probs);
            return NULL;
        }
    }
    return Py_BuildValue("(NN)", ids, probs);
}

/* Matrix::dotRow of row ``i`` of ``output`` (QuantMatrix's: the sum over the codes' centroids, then times the
 * row's norm) */
static inline float dot_row(Py_buffer *output, Py_buffer *norms, Py_ssize_t i, const float *hidden) {
    const char *w = (const char *)output->buf + i * output->strides[0];
    float f = 0.0f;
    for (Py_ssize_t j = 0; j < output->shape[1]; j++)
        f += load_f(w + j * output->strides[1]) * hidden[j];
    if (norms != NULL)
        f *= load_f((const char *)norms->buf + i * norms->strides[0]);
    return f;
}

typedef struct {
    int32_t node;
    float score;
} Visit;

/* What both predicts share: the input matrix, the line's rows, the output matrix and its norms, the hidden
 * vector made from them, and a heap of k + 1 predictions. */
typedef struct {
    Py_buffer matrix, output, norms;
    int have_norms;
    Ints rows;
    float *hidden;
    Pred *heap;
    Py_ssize_t size; /* predictions in the heap */
} Line;

static void line_end(Line *c) {
    ints_free(&c->rows);
    PyMem_Free(c->hidden);
    PyMem_Free(c->heap);
    if (c->matrix.obj)
        PyBuffer_Release(&c->matrix);
    if (c->output.obj)
        PyBuffer_Release(&c->output);
    if (c->norms.obj)
        PyBuffer_Release(&c->norms);
}

/* The line's rows read, the buffers taken and checked (``labels``: the output rows the search reads, which the
 * output matrix and its norms must hold); 0, or -1 with an exception set (call line_end either way) */
static int line_start(Line *c, PyObject *matrix, PyObject *rows, PyObject *output, PyObject *norms,
                      Py_ssize_t labels) {
    memset(c, 0, sizeof *c);
    c->rows.v = c->rows.local;
    c->have_norms = norms != Py_None;
    if (read_ints(rows, &c->rows, 0, "rows: expected a sequence of ints") < 0 ||
        get_buffer(matrix, &c->matrix, 2, 'f', "matrix") < 0 || get_buffer(output, &c->output, 2, 'f', "output") < 0 ||
        (c->have_norms && get_buffer(norms, &c->norms, 1, 'f', "norms") < 0))
        return -1;
    if (c->output.shape[1] != c->matrix.shape[1] || c->output.shape[0] < labels ||
        (c->have_norms && c->norms.shape[0] < labels)) {
        PyErr_SetString(PyExc_ValueError, "predict: the shapes of the matrices do not agree");
        return -1;
    }
    return 0;
}

/* k clamped to 1..labels (ValueError for k < 1), the hidden vector made (Model::computeHidden) and a heap of
 * k + 1 allocated; 0, or -1 with an exception set */
static int line_hidden(Line *c, long long *k, Py_ssize_t labels) {
    if (*k < 1) {
        PyErr_SetString(PyExc_ValueError, "predict: k < 1");
        return -1;
    }
    if (*k > labels)
        *k = labels;
    if ((c->hidden = alloc_items(c->matrix.shape[1], sizeof(float))) == NULL ||
        (c->heap = alloc_items((Py_ssize_t)*k + 1, sizeof(Pred))) == NULL)
        return -1;
    return mean_of_rows(&c->matrix, &c->rows, c->hidden, NULL);
}

/* Matrix::dotRow of output row ``i`` with the hidden vector */
static inline float line_dot(Line *c, Py_ssize_t i) {
    return dot_row(&c->output, c->have_norms ? &c->norms : NULL, i, c->hidden);
}

/* A prediction offered to the heap of the k best, as fastText's predict and findKBest push and pop */
static void line_offer(Line *c, long long k, float score, int32_t id) {
    c->heap[c->size++] = (Pred){score, id};
    sift_up(c->heap, c->size - 1, 0, c->heap[c->size - 1]);
    if (c->size > k)
        pop_heap(c->heap, c->size--);
}

static PyObject *hs_predict(PyObject *self, PyObject *args) {
    PyObject *matrix, *rows, *output, *norms, *children_obj, *result = NULL;
    long long osz, k;
    float log_threshold;
    if (!PyArg_ParseTuple(args, "OOOOOLLf", &matrix, &rows, &output, &norms, &children_obj, &osz, &k,
                          &log_threshold))
        return NULL;
    Line c;
    Py_buffer children = {0};
    Visit *stack = NULL;
    /* osz labels: leaves 0..osz-1, inner nodes osz..2*osz-2 (output rows 0..osz-2); label ids are int32 */
    if (osz < 1 || osz > INT32_MAX) {
        memset(&c, 0, sizeof c);
        c.rows.v = c.rows.local;
        PyErr_SetString(PyExc_ValueError, "hs_predict: osz must be in 1..2^31-1");
        goto fail;
    }
    Py_ssize_t nodes = (Py_ssize_t)(2 * osz - 1), inner = (Py_ssize_t)(osz - 1);
    if (line_start(&c, matrix, rows, output, norms, inner) < 0 ||
        get_buffer(children_obj, &children, 2, 'i', "children") < 0)
        goto fail;
    if (children.shape[1] != 2 || children.shape[0] != nodes) {
        PyErr_SetString(PyExc_ValueError, "hs_predict: the shapes of the tree and the matrices do not agree");
        goto fail;
    }
    if (line_hidden(&c, &k, (Py_ssize_t)osz) < 0 || (stack = alloc_items(nodes + 1, sizeof(Visit))) == NULL)
        goto fail;
    /* HierarchicalSoftmaxLoss::dfs from the root, the left child first */
    Py_ssize_t top = 0, visits = 0;
    stack[top++] = (Visit){(int32_t)(nodes - 1), 0.0f};
    const char *ch = children.buf;
    while (top > 0) {
        Visit v = stack[--top];
        if (v.score < log_threshold)
            continue;
        if (c.size == k && v.score < c.heap[0].score)
            continue;
        const char *at = ch + v.node * children.strides[0];
        int32_t left = load_i(at), right = load_i(at + children.strides[1]);
        if (left == -1 && right == -1 && v.node < osz) { /* a leaf: a label */
            line_offer(&c, k, v.score, v.node);
            continue;
        }
        if (left < 0 || right < 0 || left >= nodes || right >= nodes || top + 2 > nodes + 1 || v.node < osz ||
            ++visits > nodes) {
            PyErr_SetString(PyExc_ValueError, "hs_predict: the tree is not a binary tree over its nodes");
            goto fail;
        }
        float f = line_dot(&c, v.node - osz);
        f = (float)(1. / (double)(1 + expf(-f)));
        stack[top++] = (Visit){right, v.score + std_log(f)};
        stack[top++] = (Visit){left, v.score + std_log((float)(1.0 - f))};
    }
    result = sorted_predictions(c.heap, c.size);
fail:
    line_end(&c);
    PyMem_Free(stack);
    if (children.obj)
        PyBuffer_Release(&children);
    return result;
}

/* -- softmax, one-vs-all, negative sampling ------------------------------------------------------------------- */

#define MAX_SIGMOID 8
#define SIGMOID_TABLE_SIZE 512

static PyObject *flat_predict(PyObject *self, PyObject *args) {
    PyObject *matrix, *rows, *output, *norms, *table_obj, *result = NULL;
    int softmax;
    long long k;
    float threshold;
    if (!PyArg_ParseTuple(args, "OOOOpOLf", &matrix, &rows, &output, &norms, &softmax, &table_obj, &k, &threshold))
        return NULL;
    Line c;
    Py_buffer table = {0};
    float *out = NULL;
    if (line_start(&c, matrix, rows, output, norms, 0) < 0 || get_buffer(table_obj, &table, 1, 'f', "sigmoid table") < 0)
        goto fail;
    Py_ssize_t osz = c.output.shape[0];
    if (osz < 1 || osz > INT32_MAX || (c.have_norms && c.norms.shape[0] < osz) ||
        table.shape[0] != SIGMOID_TABLE_SIZE + 1) {
        PyErr_SetString(PyExc_ValueError, "flat_predict: the shapes of the matrices do not agree");
        goto fail;
    }
    if (line_hidden(&c, &k, osz) < 0 || (out = alloc_items(osz, sizeof(float))) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < osz; i++) /* Vector::mul(Matrix, Vector): dotRow of each label */
        out[i] = line_dot(&c, i);
    if (softmax) { /* SoftmaxLoss::computeOutput: exp in double of a float, the sum label after label */
        float max = out[0], z = 0.0f;
        for (Py_ssize_t i = 0; i < osz; i++)
            max = out[i] < max ? max : out[i]; /* std::max(output[i], max) */
        for (Py_ssize_t i = 0; i < osz; i++) {
            out[i] = (float)exp((double)(out[i] - max));
            z += out[i];
        }
        for (Py_ssize_t i = 0; i < osz; i++)
            out[i] /= z;
    } else { /* BinaryLogisticLoss::computeOutput: Loss::sigmoid, fastText's table */
        for (Py_ssize_t i = 0; i < osz; i++) {
            float x = out[i];
            if (x < -MAX_SIGMOID)
                out[i] = 0.0f;
            else if (x > MAX_SIGMOID)
                out[i] = 1.0f;
            else if (x != x) /* NaN (fastText's dotRow throws): the twin's table[0] */
                out[i] = load_f(table.buf);
            else {
                int64_t at = (int64_t)((x + MAX_SIGMOID) * SIGMOID_TABLE_SIZE / MAX_SIGMOID / 2);
                out[i] = load_f((const char *)table.buf + at * table.strides[0]);
            }
        }
    }
    for (Py_ssize_t i = 0; i < osz; i++) { /* Loss::findKBest */
        if (out[i] < threshold)
            continue;
        float score = std_log(out[i]);
        if (c.size == k && score < c.heap[0].score)
            continue;
        line_offer(&c, k, score, (int32_t)i);
    }
    result = sorted_predictions(c.heap, c.size);
fail:
    line_end(&c);
    PyMem_Free(out);
    if (table.obj)
        PyBuffer_Release(&table);
    return result;
}

static PyMethodDef methods[] = {
    {"ngram_rows", ngram_rows, METH_VARARGS, "Dictionary::computeSubwords of the bytes of <word>: its input rows."},
    {"fnv1a", fnv1a, METH_O, "Dictionary::hash of bytes."},
    {"word_ngram_rows", word_ngram_rows, METH_VARARGS, "Dictionary::addWordNgrams of a line's token hashes."},
    {"pq_rows", pq_rows, METH_VARARGS, "ProductQuantizer::addcode of quantized rows into out."},
    {"mean_rows", mean_rows, METH_VARARGS, "The mean of matrix rows into out, as fastText makes a word's vector."},
    {"mean_file_rows", mean_file_rows, METH_VARARGS, "mean_rows of a matrix mapped from a file: rows in regions of "
     "the file not read before read with pread."},
    {"hs_predict", hs_predict, METH_VARARGS, "Model::predict of one line's input rows, hierarchical softmax."},
    {"flat_predict", flat_predict, METH_VARARGS, "Model::predict of one line's input rows: softmax, ova or ns."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", "fastText's per-call paths in C.", -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }

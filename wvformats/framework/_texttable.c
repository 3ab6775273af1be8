/* The text word tables' compiled kernel: lines "word v1 ... vD\n" parsed into a float32 or float64 matrix, every
 * number the double that Python's float() gives for its spelling (then rounded to float32 as numpy rounds).
 *
 * A number of at most 19 significant digits whose value is m * 10^e with m <= 2^53 and |e| <= 22 is exact by
 * one IEEE operation (Clinger's fast path: both operands exact, the product or quotient correctly rounded);
 * every other spelling (long mantissas, large exponents, subnormals) is parsed afterwards by Python's own
 * PyOS_string_to_double, with the GIL; inf and nan (any case, nan always positive, as numpy's parser reads
 * "-nan") are the only words taken. Anything that is not a regular line (another separator, nan, inf, an
 * empty word, a missing newline) stops the parse: the caller then reads the body with its pure-Python twin
 * (pyarrow's or numpy's parser, then the checked line loop, which names the fault).
 *
 * Entry points (module wvformats.framework._texttable):
 *   count_lines(buf, start, end) -> int                    newlines in buf[start:end)
 *   parse_rows(buf, start, end, dim, wide, out, wstarts, wends, rows)
 *       -> (parsed, stop, trailing, crlf)                   see parse_rows below
 * (the words are made from their spans by _wordtables.words).
 * Both release the GIL while they scan; no size taken from Python is kept across a call that runs Python code.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>

/* the powers of ten that a float32 holds exactly */
static const float POW10F[11] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#define IS_DIGIT(c) ((unsigned)((unsigned char)(c) - '0') < 10u)

/* A decimal number [+-](digits[.digits*] | .digits)([eE][+-]digits), or inf, infinity or nan in any case, at p
 * (before e, and e[-1] is a newline: a run of digits stops before it): the position after it, or NULL when
 * there is none. *slow is 1 when the value needs the exact parser; else, when it is 2, *narrow holds its
 * float32 (asked for by ``narrow``, and taken where it is exact), and otherwise *val its double.
 *
 * The float32: m and 10^k both float32 (m <= 2^24, k <= 10), one float32 operation rounds m * 10^k or
 * m / 10^k once, and that is float32(double(m) (op) 10^k), the double of Clinger's fast path rounded to
 * float32 (numpy's astype): rounding twice, first to 53 bits then to 24, is innocuous for one operation of
 * 24-bit operands, since 53 >= 2 * 24 + 2 (Figueroa, "When is double rounding innocuous?", 1995). */
static inline const char *number(const char *p, const char *e, double *val, float *narrow, int *slow) {
    int neg = 0;
    uint64_t m = 0; /* the digits as one integer: exact while there are at most 19 (else wrapped: slow) */
    int64_t exp10 = 0;
    const char *s;
    Py_ssize_t nd;
    neg = *p == '-';
    p += neg | (*p == '+');
    s = p;
    while (IS_DIGIT(*p)) m = m * 10 + (unsigned)(*p++ - '0');
    nd = p - s;
    if (*p == '.') {
        const char *f = ++p;
        while (IS_DIGIT(*p)) m = m * 10 + (unsigned)(*p++ - '0');
        nd += p - f;
        exp10 = -(int64_t)(p - f);
    }
    if (nd == 0) {
        static const char *const names[] = {"infinity", "inf", "nan"};
        int k;
        if (p != s) return NULL; /* "." alone */
        for (k = 0; k < 3; k++) {
            size_t n = strlen(names[k]), i;
            if ((size_t)(e - p) < n) continue;
            for (i = 0; i < n && (p[i] | 0x20) == names[k][i]; i++) {
            }
            if (i == n) {
                /* a NaN is positive whatever its sign, as numpy's parser and the other paths read it */
                *val = k == 2 ? Py_NAN : (neg ? -Py_HUGE_VAL : Py_HUGE_VAL);
                *slow = 0;
                return p + n;
            }
        }
        return NULL;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        int eneg = 0;
        int64_t x = 0;
        p++;
        if (p < e && (*p == '-' || *p == '+')) {
            eneg = *p == '-';
            p++;
        }
        if (!(p < e && IS_DIGIT(*p))) return NULL;
        for (; p < e && IS_DIGIT(*p); p++)
            if (x < 1000000) x = x * 10 + (*p - '0'); /* (beyond any double: the exact parser's) */
        exp10 += eneg ? -x : x;
    }
    if (narrow != NULL && nd <= 19 && m <= ((uint64_t)1 << 24) && exp10 >= -10 && exp10 <= 10) {
        float f = (float)m;
        f = exp10 < 0 ? f / POW10F[-exp10] : f * POW10F[exp10];
        *narrow = neg ? -f : f;
        *slow = 2;
    } else if (nd <= 19 && m <= ((uint64_t)1 << 53) && exp10 >= -22 && exp10 <= 22) {
        double d = (double)m;
        d = exp10 < 0 ? d / POW10[-exp10] : d * POW10[exp10];
        *val = neg ? -d : d;
        *slow = 0;
    } else {
        *slow = 1;
    }
    return p;
}

/* float32 of a double as numpy's astype rounds it (nearest, ties to even; inf past the largest float's half
 * step), without a conversion of an out-of-range value (undefined in C) */
static float to_f32(double d) {
    double a = d < 0 ? -d : d;
    if (a >= 0x1.ffffffp127) return d < 0 ? -(float)INFINITY : (float)INFINITY;
    if (a > FLT_MAX) return d < 0 ? -FLT_MAX : FLT_MAX;
    return (float)d;
}

static PyObject *count_lines(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t start, end, n = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nn", &b, &start, &end)) return NULL;
    if (start < 0 || end > b.len || start > end) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
    const char *p = (const char *)b.buf + start, *e = (const char *)b.buf + end;
    Py_BEGIN_ALLOW_THREADS
    while (p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        n++;
        p++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(n);
}

typedef struct {
    Py_ssize_t at, len, slot; /* a number for the exact parser: where, how long, which value */
} Slow;

/* parse_rows(buf, start, end, dim, wide, out, wstarts, wends, rows): the ``rows`` lines of buf[start:end)
 * (which must end right after the last one's newline), each "word" then ``dim`` times " number", then at
 * most one space and one "\r" before its "\n". Values go to ``out`` (rows * dim doubles when ``wide``, else
 * float32), each word's byte span in buf to ``wstarts``/``wends`` (int64). Returns (parsed, stop, trailing,
 * crlf): ``parsed`` is ``rows`` on success, else -1 with ``stop`` the offset where the body stops being
 * regular; ``trailing``/``crlf`` count the lines with a trailing space / a "\r". */
static PyObject *parse_rows(PyObject *self, PyObject *args) {
    Py_buffer b, out, ws, we;
    Py_ssize_t start, end, dim, rows;
    int wide;
    PyObject *result = NULL;
    Slow *slow = NULL;
    Py_ssize_t nslow = 0, capslow = 0, parsed = -1, stop = 0, trailing = 0, crlf = 0;
    int nomem = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnnpw*w*w*n", &b, &start, &end, &dim, &wide, &out, &ws, &we, &rows))
        return NULL;
    size_t item = wide ? sizeof(double) : sizeof(float);
    if (start < 0 || end > b.len || start > end || dim < 1 || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "range outside the buffer, or no numbers per line");
        goto done;
    }
    /* every size checked before use: rows * dim values of ``item`` bytes, rows int64 offsets */
    if ((size_t)rows > (size_t)PY_SSIZE_T_MAX / (size_t)dim / item || (size_t)rows > (size_t)PY_SSIZE_T_MAX / 8) {
        PyErr_SetString(PyExc_OverflowError, "rows x dim overflows");
        goto done;
    }
    if ((size_t)out.len < (size_t)rows * (size_t)dim * item || (size_t)ws.len < (size_t)rows * 8 ||
        (size_t)we.len < (size_t)rows * 8) {
        PyErr_SetString(PyExc_ValueError, "output buffers smaller than rows x dim");
        goto done;
    }
    if (((uintptr_t)out.buf & (item - 1)) != 0 || ((uintptr_t)ws.buf & 7) != 0 || ((uintptr_t)we.buf & 7) != 0) {
        PyErr_SetString(PyExc_ValueError, "output buffers not aligned to their items");
        goto done;
    }
    {
        /* the body ends with a newline (else it is not regular): the scans of a word or a run of digits stop
         * there, before ``e``, without a bound check per byte */
        const char *base = (const char *)b.buf, *p = base + start, *e = base + end;
        double *o64 = (double *)out.buf;
        float *o32 = (float *)out.buf;
        int64_t *wsv = (int64_t *)ws.buf, *wev = (int64_t *)we.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t r, j, slot = 0;
        if (end > start && e[-1] != '\n') goto irregular;
        for (r = 0; r < rows; r++) {
            const char *w = p;
            if (p >= e) goto irregular; /* (fewer lines than ``rows``) */
            while (*p != ' ' && *p != '\n') p++;
            if (*p != ' ' || p == w) goto irregular;
            wsv[r] = (int64_t)(w - base);
            wev[r] = (int64_t)(p - base);
            for (j = 0; j < dim; j++, slot++) {
                double v = 0.0;
                float f = 0.0f;
                int s;
                const char *q;
                if (p >= e || *p != ' ') goto irregular;
                p++;
                q = number(p, e, &v, wide ? NULL : &f, &s);
                if (q == NULL) goto irregular;
                if (s == 2) {
                    o32[slot] = f;
                } else if (s) {
                    if (nslow == capslow) {
                        Py_ssize_t cap = capslow ? capslow : 64;
                        if (cap > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(Slow)) {
                            nomem = 1;
                            goto irregular;
                        }
                        Slow *grown = PyMem_RawRealloc(slow, (size_t)(2 * cap) * sizeof(Slow));
                        if (grown == NULL) {
                            nomem = 1;
                            goto irregular;
                        }
                        slow = grown;
                        capslow = 2 * cap;
                    }
                    slow[nslow].at = p - base;
                    slow[nslow].len = q - p;
                    slow[nslow].slot = slot;
                    nslow++;
                } else if (wide) {
                    o64[slot] = v;
                } else {
                    o32[slot] = to_f32(v);
                }
                p = q;
            }
            if (p < e && *p == ' ') {
                p++;
                trailing++;
            }
            if (p < e && *p == '\r') {
                p++;
                crlf++;
            }
            if (p >= e || *p != '\n') goto irregular;
            p++;
        }
        if (p == e) parsed = rows;
    irregular:
        stop = p - base;
        Py_END_ALLOW_THREADS
    }
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (parsed >= 0) { /* the numbers the fast path left, by Python's own parser (what float() runs) */
        char small[64];
        Py_ssize_t k;
        for (k = 0; k < nslow; k++) {
            Py_ssize_t len = slow[k].len;
            char *text = len < (Py_ssize_t)sizeof small ? small : PyMem_Malloc((size_t)len + 1);
            char *after;
            double v;
            if (text == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            memcpy(text, (const char *)b.buf + slow[k].at, (size_t)len);
            text[len] = '\0';
            v = PyOS_string_to_double(text, &after, NULL);
            int bad = after != text + len;
            if (text != small) PyMem_Free(text);
            if (v == -1.0 && PyErr_Occurred()) goto done;
            if (bad) {
                PyErr_SetString(PyExc_ValueError, "a number the exact parser does not read whole");
                goto done;
            }
            if (wide)
                ((double *)out.buf)[slow[k].slot] = v;
            else
                ((float *)out.buf)[slow[k].slot] = to_f32(v);
        }
    }
    result = Py_BuildValue("nnnn", parsed, stop, trailing, crlf);
done:
    PyMem_RawFree(slow);
    PyBuffer_Release(&b);
    PyBuffer_Release(&out);
    PyBuffer_Release(&ws);
    PyBuffer_Release(&we);
    return result;
}

static PyMethodDef methods[] = {
    {"count_lines", count_lines, METH_VARARGS, "count_lines(buf, start, end): newlines in buf[start:end)"},
    {"parse_rows", parse_rows, METH_VARARGS,
     "parse_rows(buf, start, end, dim, wide, out, wstarts, wends, rows) -> (parsed, stop, trailing, crlf)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_texttable",
                                    "Text word tables: lines of a word and numbers parsed exactly.", -1, methods};

PyMODINIT_FUNC PyInit__texttable(void) { return PyModule_Create(&module); }

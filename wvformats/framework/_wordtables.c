/* The binary word tables' compiled kernel: Leader's records (u32le length, word, row) and word2vec's (newlines,
 * word, space, row) walked one after the other, each record's row copied into a matrix as it is passed (the GIL
 * released), and the words of any word table (these and the text tables') made into one list of str, each word's
 * bytes hashed on the way for the duplicate count. Its pure-Python twin is wordtables.py's numpy path (the record
 * walks of records.py, the rows gathered as byte windows, decode_spans, the model's count_duplicates), which
 * also names every fault: the kernel only stops where a record is not whole or a word does not decode, and
 * the caller then takes the twin.
 *
 * Entry points (module wvformats.framework._wordtables):
 *   walk(buf, pos, end, lo, count, rowbytes, prefixed, wstarts, wends, gaps, out) -> (found, after)
 *   words(buf, wstarts, wends, lo, hi, surrogates, hashes, into) -> True, or False
 * No size taken from Python is kept across a call that runs Python code.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LONGEST_WORD 1000000 /* how far a word2vec word is looked for its space (as the checked loop looks) */
/* whether a buffer's start suits items of ``n`` bytes (the offsets, gaps and hashes are read and written as such) */
#define ALIGNED(view, n) (((uintptr_t)(view).buf & ((n) - 1)) == 0)

/* walk(buf, pos, end, lo, count, rowbytes, prefixed, wstarts, wends, gaps, out): up to ``count`` records from
 * ``pos`` (``prefixed``: Leader's, else word2vec's), the i-th one's word span in buf to ``wstarts``/``wends``[lo + i]
 * (int64), for word2vec the newlines before it to ``gaps``[lo + i] (uint32; unused for Leader), and its row of
 * ``rowbytes`` bytes to row lo + i of ``out`` (a C-contiguous matrix; an empty buffer: no rows copied). A caller
 * walks a table a block at a time from one thread while another makes the words of the blocks walked. Returns
 * (records found, the offset after the last); fewer than ``count`` where a record is not whole (the caller's twin
 * names it). */
static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer b, ws, we, gp, out;
    Py_ssize_t pos, end, lo, count, rowbytes, found = 0;
    int prefixed;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnnnnpw*w*w*w*", &b, &pos, &end, &lo, &count, &rowbytes, &prefixed, &ws, &we,
                          &gp, &out))
        return NULL;
    if (pos < 0 || end > b.len || pos > end || lo < 0 || count < 0 || rowbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        goto done;
    }
    /* lo + count records of every output (no product can overflow: each is checked against a buffer's length) */
    if (count > PY_SSIZE_T_MAX - lo || (size_t)(lo + count) > (size_t)ws.len / 8 ||
        (size_t)(lo + count) > (size_t)we.len / 8 || (!prefixed && (size_t)(lo + count) > (size_t)gp.len / 4) ||
        (out.len > 0 && rowbytes > 0 && (size_t)(lo + count) > (size_t)out.len / (size_t)rowbytes)) {
        PyErr_SetString(PyExc_ValueError, "offset or output buffers smaller than lo + count");
        goto done;
    }
    if (!ALIGNED(ws, 8) || !ALIGNED(we, 8) || !ALIGNED(gp, 4)) {
        PyErr_SetString(PyExc_ValueError, "offset buffers not aligned to their items");
        goto done;
    }
    {
        const unsigned char *base = (const unsigned char *)b.buf;
        int64_t *wsv = (int64_t *)ws.buf + lo, *wev = (int64_t *)we.buf + lo;
        uint32_t *gv = (uint32_t *)gp.buf + (prefixed ? 0 : lo);
        char *dst = out.len > 0 ? (char *)out.buf + (size_t)lo * (size_t)rowbytes : NULL;
        Py_ssize_t p = pos;
        Py_BEGIN_ALLOW_THREADS
        for (; found < count; found++) {
            Py_ssize_t w, stop;
            if (prefixed) {
                uint32_t n;
                if (end - p < 4) break;
                n = (uint32_t)base[p] | (uint32_t)base[p + 1] << 8 | (uint32_t)base[p + 2] << 16 |
                    (uint32_t)base[p + 3] << 24;
                w = p + 4;
                if ((uint64_t)(end - w) < (uint64_t)n) break;
                stop = w + (Py_ssize_t)n;
            } else {
                const unsigned char *sp;
                Py_ssize_t look;
                w = p;
                while (w < end && base[w] == '\n') w++;
                if (w - p > (Py_ssize_t)UINT32_MAX) break;
                gv[found] = (uint32_t)(w - p);
                look = end - w < LONGEST_WORD ? end - w : LONGEST_WORD;
                sp = look > 0 ? memchr(base + w, ' ', (size_t)look) : NULL;
                if (sp == NULL || sp == base + w) break; /* no space, or an empty word */
                stop = sp - base;
            }
            if (end - stop - (prefixed ? 0 : 1) < rowbytes) break;
            wsv[found] = (int64_t)w;
            wev[found] = (int64_t)stop;
            p = stop + (prefixed ? 0 : 1);
            if (dst != NULL) memcpy(dst + (size_t)found * (size_t)rowbytes, base + p, (size_t)rowbytes);
            p += rowbytes;
#ifdef __GNUC__ /* the records about 8 ahead asked for now: the walk then waits less on memory */
            if (end - p > 8 * (rowbytes + 64)) __builtin_prefetch(base + p + 8 * (rowbytes + 16));
#endif
        }
        pos = p;
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("nn", found, pos);
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&ws);
    PyBuffer_Release(&we);
    PyBuffer_Release(&gp);
    PyBuffer_Release(&out);
    return result;
}

/* A 64-bit hash of a word's bytes, 8 at a time (equal words hash alike; the caller compares the bytes of the
 * words whose hashes repeat), and in *ascii whether they are all ASCII. */
static inline uint64_t span_hash(const unsigned char *p, size_t n, int *ascii) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n, x, high = 0;
    for (; n >= 8; p += 8, n -= 8) {
        memcpy(&x, p, 8);
        high |= x;
        h = (h ^ x) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (n) {
        x = 0;
        memcpy(&x, p, n);
        high |= x;
        h = (h ^ x) * 0xc4ceb9fe1a85ec53ull;
    }
    *ascii = (high & 0x8080808080808080ull) == 0;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* words(buf, wstarts, wends, lo, hi, surrogates, hashes, into): the words at byte spans lo..hi of buf as str
 * (UTF-8; undecodable bytes as surrogate escapes when ``surrogates``) put at into[lo..hi) (a list: one list for
 * the whole table, made once, filled a block at a time from two threads), each span's hash to hashes[lo..hi)
 * (uint64). Returns True, or False where a word does not decode (the caller's twin names it). Every span and
 * the list's size are checked where they are used: replacing an item drops the old one, which may run
 * Python code. */
static PyObject *words(PyObject *self, PyObject *args) {
    Py_buffer b, ws, we, hs;
    Py_ssize_t lo, hi, k;
    int surrogates;
    PyObject *into, *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*nnpw*O!", &b, &ws, &we, &lo, &hi, &surrogates, &hs, &PyList_Type, &into))
        return NULL;
    if (lo < 0 || hi < lo || (size_t)hi > (size_t)ws.len / 8 || (size_t)hi > (size_t)we.len / 8 ||
        (size_t)hi > (size_t)hs.len / 8) {
        PyErr_SetString(PyExc_ValueError, "words outside the offset or hash buffers");
        goto done;
    }
    if (!ALIGNED(ws, 8) || !ALIGNED(we, 8) || !ALIGNED(hs, 8)) {
        PyErr_SetString(PyExc_ValueError, "offset or hash buffers not aligned to their items");
        goto done;
    }
    {
        const unsigned char *base = (const unsigned char *)b.buf;
        const int64_t *wsv = (const int64_t *)ws.buf, *wev = (const int64_t *)we.buf;
        uint64_t *hv = (uint64_t *)hs.buf;
        const char *errors = surrogates ? "surrogateescape" : NULL;
        for (k = lo; k < hi; k++) {
            int64_t a = wsv[k], z = wev[k];
            int ascii;
            PyObject *s;
            if (a < 0 || z < a || z > b.len) {
                PyErr_SetString(PyExc_ValueError, "a word outside the buffer");
                goto done;
            }
#ifdef __GNUC__ /* (the word 8 ahead asked for now, as the walk asks for its records) */
            if (k + 8 < hi && wsv[k + 8] >= 0 && wsv[k + 8] < b.len) __builtin_prefetch(base + wsv[k + 8]);
#endif
            hv[k] = span_hash(base + a, (size_t)(z - a), &ascii);
            if (ascii && z - a > 1) { /* (one character: the interpreter's shared str) */
                s = PyUnicode_New((Py_ssize_t)(z - a), 127);
                if (s != NULL) memcpy(PyUnicode_1BYTE_DATA(s), base + a, (size_t)(z - a));
            } else {
                s = PyUnicode_DecodeUTF8((const char *)base + a, (Py_ssize_t)(z - a), errors);
            }
            if (s == NULL) {
                if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) { /* the twin names the word */
                    PyErr_Clear();
                    result = Py_NewRef(Py_False);
                }
                goto done;
            }
            if (PyList_SetItem(into, k, s) < 0) goto done; /* (a list shorter than hi: IndexError; s dropped) */
        }
    }
    result = Py_NewRef(Py_True);
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&ws);
    PyBuffer_Release(&we);
    PyBuffer_Release(&hs);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(buf, pos, end, lo, count, rowbytes, prefixed, wstarts, wends, gaps, out) -> (found, after)"},
    {"words", words, METH_VARARGS,
     "words(buf, wstarts, wends, lo, hi, surrogates, hashes, into) -> True, or False (a word that does not decode)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wordtables",
                                    "Word tables: binary records walked and their rows copied; the words of any table made.", -1, methods};

PyMODINIT_FUNC PyInit__wordtables(void) { return PyModule_Create(&module); }

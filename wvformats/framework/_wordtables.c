/* The binary word tables' compiled kernel: Leader's records (u32le length, word, row) and word2vec's (newlines,
 * word, space, row) walked one after the other, then their rows copied into a matrix and their words joined
 * for one decode, with the GIL released. Its pure-Python twin is wordtables.py's numpy path (the record walks
 * of records.py, the rows gathered as byte windows, decode_spans), which also names every fault: the kernel
 * only stops where a record is not whole, and the caller then takes the twin.
 *
 * Entry points (module wvformats.framework._wordtables):
 *   walk(buf, pos, end, count, rowbytes, prefixed, wstarts, wends, gaps) -> (found, after)
 *   gather(buf, wstarts, wends, skip, rowbytes, out, lo, hi) -> words
 * No size taken from Python is kept across a call that runs Python code.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LONGEST_WORD 1000000 /* how far a word2vec word is looked for its space (as the checked loop looks) */

/* walk(buf, pos, end, count, rowbytes, prefixed, wstarts, wends, gaps): up to ``count`` records from ``pos``
 * (``prefixed``: Leader's, else word2vec's), each word's byte span in buf to ``wstarts``/``wends`` (int64) and,
 * for word2vec, the newlines before it to ``gaps`` (uint32; unused for Leader). Returns (records found, the offset after the
 * last); fewer than ``count`` where a record is not whole (the caller's twin names it). */
static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer b, ws, we, gp;
    Py_ssize_t pos, end, count, rowbytes, found = 0;
    int prefixed;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnnnpw*w*w*", &b, &pos, &end, &count, &rowbytes, &prefixed, &ws, &we, &gp))
        return NULL;
    if (pos < 0 || end > b.len || pos > end || count < 0 || rowbytes < 0) {
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        goto done;
    }
    if ((size_t)count > (size_t)PY_SSIZE_T_MAX / 8 || (size_t)ws.len < (size_t)count * 8 ||
        (size_t)we.len < (size_t)count * 8 || (!prefixed && (size_t)gp.len < (size_t)count * 4)) {
        PyErr_SetString(PyExc_ValueError, "offset buffers smaller than count");
        goto done;
    }
    {
        const unsigned char *base = (const unsigned char *)b.buf;
        int64_t *wsv = (int64_t *)ws.buf, *wev = (int64_t *)we.buf;
        uint32_t *gv = (uint32_t *)gp.buf;
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
            p = stop + (prefixed ? 0 : 1) + rowbytes;
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
    return result;
}

/* gather(buf, wstarts, wends, skip, rowbytes, out, lo, hi): the rows of records lo..hi (``rowbytes`` bytes
 * from ``skip`` bytes after each word's end) copied to out's rows lo..hi; returns the words of those records
 * joined by "\n" (bytes). */
static PyObject *gather(PyObject *self, PyObject *args) {
    Py_buffer b, ws, we, out;
    Py_ssize_t skip, rowbytes, lo, hi, total = 0, k;
    PyObject *words = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*nnw*nn", &b, &ws, &we, &skip, &rowbytes, &out, &lo, &hi)) return NULL;
    if (lo < 0 || hi < lo || skip < 0 || rowbytes < 0 || (size_t)hi > (size_t)ws.len / 8 ||
        (size_t)hi > (size_t)we.len / 8 || (rowbytes && (size_t)hi > (size_t)out.len / (size_t)rowbytes)) {
        PyErr_SetString(PyExc_ValueError, "records outside the offset or output buffers");
        goto done;
    }
    {
        const int64_t *wsv = (const int64_t *)ws.buf, *wev = (const int64_t *)we.buf;
        for (k = lo; k < hi; k++) { /* every span inside the buffer, and the words' total size */
            if (wsv[k] < 0 || wev[k] < wsv[k] || wev[k] > b.len || b.len - wev[k] < skip ||
                b.len - wev[k] - skip < rowbytes) {
                PyErr_SetString(PyExc_ValueError, "a record outside the buffer");
                goto done;
            }
            if (total > PY_SSIZE_T_MAX - 1 - (Py_ssize_t)(wev[k] - wsv[k])) {
                PyErr_SetString(PyExc_OverflowError, "words too long");
                goto done;
            }
            total += (Py_ssize_t)(wev[k] - wsv[k]) + 1;
        }
        words = PyBytes_FromStringAndSize(NULL, total ? total - 1 : 0);
        if (words == NULL) goto done;
        {
            const char *base = (const char *)b.buf;
            char *dst = (char *)out.buf, *wout = PyBytes_AS_STRING(words);
            Py_BEGIN_ALLOW_THREADS
            Py_ssize_t at = 0;
            for (k = lo; k < hi; k++) {
                size_t n = (size_t)(wev[k] - wsv[k]);
                if (k > lo) wout[at++] = '\n';
                memcpy(wout + at, base + wsv[k], n);
                at += (Py_ssize_t)n;
                memcpy(dst + (size_t)k * (size_t)rowbytes, base + wev[k] + skip, (size_t)rowbytes);
            }
            Py_END_ALLOW_THREADS
        }
    }
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&ws);
    PyBuffer_Release(&we);
    PyBuffer_Release(&out);
    return words;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(buf, pos, end, count, rowbytes, prefixed, wstarts, wends, gaps) -> (found, after)"},
    {"gather", gather, METH_VARARGS, "gather(buf, wstarts, wends, skip, rowbytes, out, lo, hi) -> words"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wordtables",
                                    "Binary word tables: records walked, rows and words gathered.", -1, methods};

PyMODINIT_FUNC PyInit__wordtables(void) { return PyModule_Create(&module); }

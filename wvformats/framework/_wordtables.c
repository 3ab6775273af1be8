/* The binary word tables' compiled kernel: Leader's records (u32le length, word, row) and word2vec's (newlines,
 * word, space, row) walked one after the other, each record's row copied into a matrix as it is passed (the GIL
 * released), or, for a table read from its file a block at a time, each row moved into place in the buffer the
 * block was read into and its word set aside; and the words of any word table (these and the text tables') made
 * into one list of str, each word's bytes hashed on the way for the duplicate count. Its pure-Python twin is
 * wordtables.py's numpy path (the record walks of records.py, the rows gathered as byte windows, decode_spans,
 * the model's count_duplicates), which also names every fault: the kernel only stops where a record is not whole
 * or a word does not decode, and the caller then takes the twin.
 *
 * Entry points (module wvformats.framework._wordtables):
 *   walk(buf, pos, end, lo, count, rowbytes, prefixed, wstarts, wends, gaps, out) -> (found, after)
 *   fill(fd, at, end, block, room, count, rowbytes, prefixed, held, wstarts, wends, gaps, progress, notify)
 *       -> (found, after, wat, errno)
 *   words(buf, wstarts, wends, lo, hi, surrogates, hashes, into) -> True, or False
 *   populate(buf, start, stop) -> True, or False
 * No size taken from Python is kept across a call that runs Python code.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#ifndef MADV_POPULATE_WRITE /* (Linux 5.14; headers older than the kernel lack it: an older kernel refuses it) */
#define MADV_POPULATE_WRITE 23
#endif
#endif

#define LONGEST_WORD 1000000 /* how far a word2vec word is looked for its space (as the checked loop looks) */
/* whether a buffer's start suits items of ``n`` bytes (the offsets, gaps and hashes are read and written as such) */
#define ALIGNED(view, n) (((uintptr_t)(view).buf & ((n) - 1)) == 0)

/* The record at p of base[..end): its word's span [*w, *stop) and, for word2vec, the newlines before it (*gap);
 * its row follows at *stop (Leader) or *stop + 1 (word2vec, after the space). 0 where the record is not whole
 * before end. */
static inline int record(const unsigned char *base, Py_ssize_t p, Py_ssize_t end, Py_ssize_t rowbytes,
                         int prefixed, Py_ssize_t *w, Py_ssize_t *stop, uint32_t *gap) {
    *gap = 0;
    if (prefixed) {
        uint32_t n;
        if (end - p < 4) return 0;
        n = (uint32_t)base[p] | (uint32_t)base[p + 1] << 8 | (uint32_t)base[p + 2] << 16 | (uint32_t)base[p + 3] << 24;
        *w = p + 4;
        if ((uint64_t)(end - *w) < (uint64_t)n) return 0;
        *stop = *w + (Py_ssize_t)n;
    } else {
        const unsigned char *sp;
        Py_ssize_t q = p, look;
        while (q < end && base[q] == '\n') q++;
        if (q - p > (Py_ssize_t)UINT32_MAX) return 0;
        *gap = (uint32_t)(q - p);
        *w = q;
        look = end - q < LONGEST_WORD ? end - q : LONGEST_WORD;
        sp = look > 0 ? memchr(base + q, ' ', (size_t)look) : NULL;
        if (sp == NULL || sp == base + q) return 0; /* no space, or an empty word */
        *stop = sp - base;
    }
    return end - *stop - (prefixed ? 0 : 1) >= rowbytes;
}

/* Whether lo + count records fit the outputs of a walk: the word spans (``ws``, ``we``: int64) and, for word2vec,
 * the newlines before the words (``gp``: uint32), each aligned to its items (no product can overflow: each count is
 * checked against a buffer's length); a ValueError set where not. */
static int spans_fit(const Py_buffer *ws, const Py_buffer *we, const Py_buffer *gp, Py_ssize_t lo, Py_ssize_t count,
                     int prefixed) {
    if (count > PY_SSIZE_T_MAX - lo || (size_t)(lo + count) > (size_t)ws->len / 8 ||
        (size_t)(lo + count) > (size_t)we->len / 8 || (!prefixed && (size_t)(lo + count) > (size_t)gp->len / 4)) {
        PyErr_SetString(PyExc_ValueError, "offset buffers smaller than lo + count");
        return 0;
    }
    if (!ALIGNED(*ws, 8) || !ALIGNED(*we, 8) || !ALIGNED(*gp, 4)) {
        PyErr_SetString(PyExc_ValueError, "offset buffers not aligned to their items");
        return 0;
    }
    return 1;
}

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
    if (!spans_fit(&ws, &we, &gp, lo, count, prefixed)) goto done;
    if (out.len > 0 && rowbytes > 0 && (size_t)(lo + count) > (size_t)out.len / (size_t)rowbytes) {
        PyErr_SetString(PyExc_ValueError, "output buffer smaller than lo + count rows");
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
            uint32_t gap;
            if (!record(base, p, end, rowbytes, prefixed, &w, &stop, &gap)) break;
            if (!prefixed) gv[found] = gap;
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

/* Up to ``count`` records read into base[at..end) (``prefixed``: Leader's, else word2vec's), where base is the
 * matrix being made (rows of ``rowbytes`` bytes) and ``at`` is at or after row ``lo``'s place (each record holds
 * more than its row, so each is read before a row is moved over it): each record's word copied to keep[*wat..room)
 * (its span there to ws/we[lo + i], for word2vec the newlines before it to gp[lo + i]), then its row moved down to
 * row lo + i. Returns the records settled, fewer than ``count`` where a record is not whole before ``end`` or its
 * word does not fit in ``keep``; *at and *wat moved past them. The caller has checked every range (no GIL). */
static Py_ssize_t settle(unsigned char *base, Py_ssize_t *at, Py_ssize_t end, Py_ssize_t lo, Py_ssize_t count,
                         Py_ssize_t rowbytes, int prefixed, unsigned char *keep, Py_ssize_t room, Py_ssize_t *wat,
                         int64_t *ws, int64_t *we, uint32_t *gp) {
    Py_ssize_t found = 0, p = *at, used = *wat;
    size_t dst = (size_t)lo * (size_t)rowbytes;
    int64_t *wsv = ws + lo, *wev = we + lo;
    uint32_t *gv = gp + (prefixed ? 0 : lo);
    for (; found < count; found++, dst += (size_t)rowbytes) {
        Py_ssize_t w, stop, n;
        uint32_t gap;
        if (!record(base, p, end, rowbytes, prefixed, &w, &stop, &gap)) break;
        n = stop - w;
        if (n > room - used) break;
        if (!prefixed) gv[found] = gap;
        memcpy(keep + used, base + w, (size_t)n);
        wsv[found] = (int64_t)used;
        wev[found] = (int64_t)(used + n);
        used += n;
        p = stop + (prefixed ? 0 : 1);
        memmove(base + dst, base + p, (size_t)rowbytes); /* (dst < p: the row moves down) */
        p += rowbytes;
    }
    *at = p;
    *wat = used;
    return found;
}

/* The slots of fill's ``progress`` (int64): what it has done so far, for a thread that makes the words meanwhile
 * (hints: what is reported for certain goes through ``notify``), and the slot that thread sets to stop it. */
enum { DONE_RECORDS, READING_TO, ENDED, HALT, PROGRESS_SLOTS };

#if defined(__unix__) || defined(__APPLE__)
/* (records, file offset) written to ``notify`` (16 bytes, under PIPE_BUF: whole or not at all) */
static void tell_done(int notify, int64_t records, int64_t at) {
    int64_t message[2];
    message[0] = records;
    message[1] = at;
    if (notify >= 0)
        while (write(notify, message, sizeof message) < 0 && errno == EINTR) {}
}
#endif

/* fill(fd, at, end, block, room, count, rowbytes, prefixed, held, wstarts, wends, gaps, progress, notify): up to
 * ``count`` records of a binary table read from the file ``fd``, from its byte ``at`` up to ``end``, straight into
 * ``room`` (the matrix being made, rows of ``rowbytes`` bytes, with ``block`` bytes of room after its last row): a
 * block of at most ``block`` bytes at a time read (pread; the GIL let go of for the whole loop) where the block's
 * first row goes, then settled there (each word copied aside to ``held``, its span there to ``wstarts``/``wends``,
 * for word2vec the newlines before it to ``gaps``, each row moved down into its place); the next block read from
 * the first record not whole. After each block, (records done, the file offset after them) is written to the pipe
 * ``notify`` as two int64 (-1 - records at the end, also after a failure; -1: no pipe), and ``progress`` (int64:
 * records done, where the read under way ends in ``room``, ended, halt) is updated: another thread makes the words
 * of the blocks done meanwhile (and readies the matrix's pages ahead of the read), and stops the loop by setting
 * the halt slot; it reads the pipe until the end, as the loop waits for room in it. Returns (records found, the
 * file offset after the last, the bytes of ``held`` used, errno of a failed read or 0); fewer than ``count`` where a
 * record is not whole in a block, its word does not fit in ``held``, or the file ends (the caller's twin then
 * names it). */
static PyObject *fill(PyObject *self, PyObject *args) {
    Py_buffer b, held, ws, we, gp, pr;
    Py_ssize_t at, end, block, count, rowbytes, lo = 0, wat = 0;
    int fd, prefixed, notify, err = 0;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "innnw*nnpw*w*w*w*w*i", &fd, &at, &end, &block, &b, &count, &rowbytes, &prefixed,
                          &held, &ws, &we, &gp, &pr, &notify))
        return NULL;
    if (at < 0 || end < at || block <= 0 || count < 0 || rowbytes < 0 || block > b.len) {
        PyErr_SetString(PyExc_ValueError, "range outside the file or the buffer");
        goto done;
    }
    if (!spans_fit(&ws, &we, &gp, 0, count, prefixed)) goto done;
    /* every block read at or before row count's place, and inside the buffer */
    if (rowbytes > 0 && (size_t)count > (size_t)(b.len - block) / (size_t)rowbytes) {
        PyErr_SetString(PyExc_ValueError, "buffer smaller than count rows and a block");
        goto done;
    }
    if ((size_t)pr.len / 8 < PROGRESS_SLOTS || !ALIGNED(pr, 8)) {
        PyErr_SetString(PyExc_ValueError, "progress smaller than 4 aligned int64");
        goto done;
    }
    {
        unsigned char *base = (unsigned char *)b.buf;
        int64_t *progress = (int64_t *)pr.buf;
        Py_BEGIN_ALLOW_THREADS
#if defined(__unix__) || defined(__APPLE__)
        while (lo < count && !__atomic_load_n(&progress[HALT], __ATOMIC_ACQUIRE)) {
            Py_ssize_t dst = lo * rowbytes, want = end - at < block ? end - at : block, got = 0, after, found;
            __atomic_store_n(&progress[READING_TO], (int64_t)(dst + want), __ATOMIC_RELAXED);
            while (got < want) {
                ssize_t n = pread(fd, base + dst + got, (size_t)(want - got), (off_t)(at + got));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) err = errno;
                if (n <= 0) break;
                got += n;
            }
            after = dst;
            found = settle(base, &after, dst + got, lo, count - lo, rowbytes, prefixed, (unsigned char *)held.buf,
                           held.len, &wat, (int64_t *)ws.buf, (int64_t *)we.buf, (uint32_t *)gp.buf);
            at += after - dst;
            lo += found;
            __atomic_store_n(&progress[DONE_RECORDS], (int64_t)lo, __ATOMIC_RELEASE);
            if (!found || err || lo == count) break;
            tell_done(notify, (int64_t)lo, (int64_t)at);
        }
        __atomic_store_n(&progress[ENDED], 1, __ATOMIC_RELEASE);
        tell_done(notify, -1 - (int64_t)lo, (int64_t)at);
#else
        err = ENOSYS;
        progress[ENDED] = 1;
#endif
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("nnni", lo, at, wat, err);
done:
    PyBuffer_Release(&b);
    PyBuffer_Release(&held);
    PyBuffer_Release(&ws);
    PyBuffer_Release(&we);
    PyBuffer_Release(&gp);
    PyBuffer_Release(&pr);
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

/* populate(buf, start, stop): the memory pages wholly inside bytes [start, stop) of a writable buffer made present
 * (Linux's madvise MADV_POPULATE_WRITE: allocated and mapped as a write would, their contents unchanged; the GIL let
 * go of), so that a thread that writes there later does not stop for them: one thread makes ready the pages of the
 * matrix another is reading a table into. Returns whether the system did it (False: it cannot, or a page could
 * not be had; no byte changes either way: there are no bits for a twin to give). */
static PyObject *populate(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t start, stop;
    int done = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*nn", &b, &start, &stop))
        return NULL;
    if (start < 0 || stop > b.len || start > stop) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
#if defined(__linux__)
    {
        long page = sysconf(_SC_PAGESIZE);
        if (page > 0 && (page & (page - 1)) == 0) {
            uintptr_t mask = (uintptr_t)page - 1, a = ((uintptr_t)b.buf + (uintptr_t)start + mask) & ~mask,
                      z = ((uintptr_t)b.buf + (uintptr_t)stop) & ~mask;
            if (z > a) {
                int r;
                Py_BEGIN_ALLOW_THREADS
                r = madvise((void *)a, (size_t)(z - a), MADV_POPULATE_WRITE);
                Py_END_ALLOW_THREADS
                done = r == 0;
            }
        }
    }
#endif
    PyBuffer_Release(&b);
    return PyBool_FromLong(done);
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(buf, pos, end, lo, count, rowbytes, prefixed, wstarts, wends, gaps, out) -> (found, after)"},
    {"fill", fill, METH_VARARGS,
     "fill(fd, at, end, block, room, count, rowbytes, prefixed, held, wstarts, wends, gaps, progress, notify) -> "
     "(found, after, wat, errno)"},
    {"words", words, METH_VARARGS,
     "words(buf, wstarts, wends, lo, hi, surrogates, hashes, into) -> True, or False (a word that does not decode)"},
    {"populate", populate, METH_VARARGS,
     "populate(buf, start, stop) -> True, or False (the pages of a writable buffer's range made present, unchanged)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wordtables",
                                    "Word tables: binary records walked and their rows copied; the words of any table made.", -1, methods};

PyMODINIT_FUNC PyInit__wordtables(void) { return PyModule_Create(&module); }

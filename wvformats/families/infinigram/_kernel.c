/* An infini-gram shard's suffix array out of core, in C: the records of a sorted part, and the k-way merge of the
 * parts (outofcore.py holds the twins, which give the same bytes, and the plan around them).
 *
 * A part is a run of a shard's suffixes in their exact order, stored as two files read in step: k-byte
 * little-endian pointers (the table's own) and AUX_SIZE-byte records, each the suffix's LCP with the suffix before
 * it in the part (u16 little-endian; LCP_UNKNOWN when it was not found in the window or is that large) and the
 * AUX_TAIL bytes of the suffix that follow that LCP (its first bytes for a part's first suffix), zero past the
 * corpus's end.
 *
 *   part_records(win, pos, start, k, at_end, ptr_out, aux_out, prev) -> list[int]
 *       ``win``: the bytes of the window sorted (corpus offset ``start``), ``pos``: int32 offsets into it in
 *       suffix order, ``prev`` the offset before pos[0] in that order (-1: none). Writes each suffix's pointer
 *       (start + offset, k bytes) and record into ``ptr_out`` and ``aux_out`` (when they are not None), and
 *       returns the indices i whose predecessor's window text is a proper prefix of i's while the window does not
 *       reach the corpus's end (``at_end`` false): the pairs whose order the window could not decide.
 *   merge(corpus_fd, n, k, ptr_fds, aux_fds, los, his, out_fd, out_at, buffer, punch) -> int
 *       The records [los[i], his[i]) of the parts (their files open as ptr_fds[i], aux_fds[i]) merged into suffix
 *       order, written as k-byte pointers at pointer out_at of out_fd (pwrite); reads the corpus (n bytes,
 *       corpus_fd) by pread only where two suffixes tie past what the records hold. ``buffer``: bytes of records
 *       buffered over all the parts. ``punch``: free the parts' consumed bytes as it goes (Linux's
 *       fallocate(PUNCH_HOLE); elsewhere nothing), so that the disk holds the parts or the table, not both.
 *       Returns the pointers written.
 *
 * The merge is a loser tree that keeps, for each part's current suffix, its LCP with the last suffix written
 * (Ng and Kakehi's LCP merge) and its byte there: two suffixes with different LCPs are ordered by them alone, equal
 * ones by that byte, and those that agree on it too are compared from there on, from the records' tail bytes where
 * they cover it, else from the corpus (read 64 bytes at a time, doubling while a tie goes on). Each suffix entering
 * the tree takes its record's LCP, which is its LCP with the suffix just written (its predecessor in its part); an
 * unknown one is computed from the corpus. The keys live in the tree's nodes, a replay reads a stream only on a tie.
 *
 * Safe on any argument: sizes are checked for overflow before allocation, every sequence is read into C arrays
 * before any size taken from it is used, pointers read from a part are checked against the corpus's size, and
 * the GIL is released only once no Python object is touched. Bad arguments raise TypeError, ValueError,
 * OverflowError or MemoryError; failed reads or writes OSError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#ifndef _WIN32
#include <fcntl.h>
#include <unistd.h>
#else
#include <io.h>
#endif

/* the twins' constants (tests/test_compiled.py reads the #defines and compares) */
#define AUX_SIZE 14
#define AUX_TAIL 12
#define LCP_UNKNOWN 0xFFFF

#define FIRST_READ 64    /* bytes of the corpus read at a suffix's first tie past its record */
#define CACHE 4096       /* at most this many bytes read at once while a tie goes on */
#define PUNCH_STEP (1 << 20) /* records consumed before their bytes are freed (a part lags at most this) */

/* -- helpers ---------------------------------------------------------------------------------------------------- */

/* The first offset in [0, len) where a and b differ, or len. */
static size_t mismatch(const unsigned char *a, const unsigned char *b, size_t len) {
    size_t i = 0;
    while (i + 8 <= len) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) {
#if PY_LITTLE_ENDIAN && defined(__GNUC__)
            return i + (size_t)(__builtin_ctzll(x ^ y) >> 3);
#else
            while (a[i] == b[i])
                i++;
            return i;
#endif
        }
        i += 8;
    }
    while (i < len && a[i] == b[i])
        i++;
    return i;
}

static void put_le(unsigned char *out, uint64_t v, int k) {
#if PY_LITTLE_ENDIAN
    memcpy(out, &v, (size_t)k);
#else
    for (int i = 0; i < k; i++)
        out[i] = (unsigned char)(v >> (8 * i));
#endif
}

static uint64_t get_le(const unsigned char *in, int k) {
    uint64_t v = 0;
#if PY_LITTLE_ENDIAN
    memcpy(&v, in, (size_t)k);
#else
    for (int i = 0; i < k; i++)
        v |= (uint64_t)in[i] << (8 * i);
#endif
    return v;
}

/* pread of exactly len bytes (0 on success, -1 with errno set; EIO when the file is shorter). */
static int read_at(int fd, void *buf, size_t len, uint64_t at) {
    unsigned char *p = buf;
    while (len) {
#ifndef _WIN32
        ssize_t got = pread(fd, p, len, (off_t)at);
#else
        ssize_t got = -1;
        errno = ENOSYS;
#endif
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (got == 0) {
            errno = EIO;
            return -1;
        }
        p += got, len -= (size_t)got, at += (uint64_t)got;
    }
    return 0;
}

static int write_at(int fd, const void *buf, size_t len, uint64_t at) {
    const unsigned char *p = buf;
    while (len) {
#ifndef _WIN32
        ssize_t put = pwrite(fd, p, len, (off_t)at);
#else
        ssize_t put = -1;
        errno = ENOSYS;
#endif
        if (put < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += put, len -= (size_t)put, at += (uint64_t)put;
    }
    return 0;
}

static void punch_hole(int fd, uint64_t at, uint64_t len) {
#if defined(__linux__) && defined(FALLOC_FL_PUNCH_HOLE)
    if (len)
        (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)at, (off_t)len);
#else
    (void)fd, (void)at, (void)len;
#endif
}

/* -- part_records ------------------------------------------------------------------------------------------------ */

static PyObject *part_records(PyObject *self, PyObject *args) {
    PyObject *win_o, *pos_o, *ptr_o, *aux_o;
    long long start, prev;
    int k, at_end;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLipOOL", &win_o, &pos_o, &start, &k, &at_end, &ptr_o, &aux_o, &prev))
        return NULL;
    if (k < 1 || k > 8)
        return PyErr_Format(PyExc_ValueError, "k must be 1 to 8, not %d", k);
    if (start < 0)
        return PyErr_Format(PyExc_ValueError, "start must be >= 0");
    Py_buffer win = {0}, pos = {0}, ptr = {0}, aux = {0};
    PyObject *ties = NULL, *result = NULL;
    if (PyObject_GetBuffer(win_o, &win, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(pos_o, &pos, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    size_t flen = pos.format ? strlen(pos.format) : 0;
    if (pos.itemsize != 4 || !flen || (pos.format[flen - 1] != 'i' && pos.format[flen - 1] != 'l') ||
        (flen == 2 && pos.format[0] != '=' && pos.format[0] != '@' && pos.format[0] != (PY_LITTLE_ENDIAN ? '<' : '>')) ||
        flen > 2) {
        PyErr_SetString(PyExc_TypeError, "pos must be a native int32 buffer");
        goto done;
    }
    Py_ssize_t m = pos.len / 4, w = win.len;
    if (ptr_o != Py_None) {
        if (PyObject_GetBuffer(ptr_o, &ptr, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
            goto done;
        if (ptr.len / k != m || ptr.len % k) {
            PyErr_SetString(PyExc_ValueError, "ptr_out must hold k bytes per position");
            goto done;
        }
    }
    if (aux_o != Py_None) {
        if (PyObject_GetBuffer(aux_o, &aux, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
            goto done;
        if (aux.len / AUX_SIZE != m || aux.len % AUX_SIZE) {
            PyErr_SetString(PyExc_ValueError, "aux_out must hold AUX_SIZE bytes per position");
            goto done;
        }
    }
    if (prev < -1 || prev >= (long long)w) {
        PyErr_SetString(PyExc_ValueError, "prev must be -1 or an offset into win");
        goto done;
    }
    const int32_t *p = pos.buf;
    const unsigned char *t = win.buf;
    unsigned char *po = ptr.buf, *ao = aux.buf;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (p[i] < 0 || p[i] >= w) {
            PyErr_Format(PyExc_ValueError, "pos[%zd] = %d is outside the window of %zd bytes", i, (int)p[i], w);
            goto done;
        }
        uint64_t value = (uint64_t)start + (uint64_t)p[i];
        if (k < 8 && value >> (8 * k)) {
            PyErr_Format(PyExc_ValueError, "pointer %llu does not fit in %d bytes", (unsigned long long)value, k);
            goto done;
        }
    }
    ties = PyList_New(0);
    if (!ties)
        goto done;
    for (Py_ssize_t i = 0; i < m; i++) {
        Py_ssize_t b = p[i], a = i ? p[i - 1] : (Py_ssize_t)prev;
#if defined(__GNUC__)
        if (i + 16 < m) /* (neighbours in suffix order lie anywhere in the window: their bytes fetched ahead) */
            __builtin_prefetch(t + p[i + 16]);
#endif
        size_t lcp = 0;
        int known = 1;
        if (a >= 0) {
            size_t la = (size_t)(w - a), lb = (size_t)(w - b), lim = la < lb ? la : lb;
            lcp = mismatch(t + a, t + b, lim);
            if (lcp == lim && !at_end) { /* a window's text ran out: the true LCP may be longer */
                known = 0;
                if (la < lb) {
                    PyObject *idx = PyLong_FromSsize_t(i);
                    if (!idx || PyList_Append(ties, idx) < 0) {
                        Py_XDECREF(idx);
                        goto done;
                    }
                    Py_DECREF(idx);
                }
            }
        }
        if (lcp >= LCP_UNKNOWN || (!at_end && (size_t)b + lcp + AUX_TAIL > (size_t)w))
            known = 0;
        if (po)
            put_le(po + (size_t)i * k, (uint64_t)start + (uint64_t)b, k);
        if (ao) {
            unsigned char *r = ao + (size_t)i * AUX_SIZE;
            memset(r, 0, AUX_SIZE);
            if (known) {
                r[0] = (unsigned char)(lcp & 0xFF), r[1] = (unsigned char)(lcp >> 8);
                for (size_t j = 0; j < AUX_TAIL && (size_t)b + lcp + j < (size_t)w; j++)
                    r[2 + j] = t[b + lcp + j];
            } else {
                r[0] = r[1] = 0xFF;
            }
        }
    }
    result = ties;
    ties = NULL;
done:
    Py_XDECREF(ties);
    if (win.obj)
        PyBuffer_Release(&win);
    if (pos.obj)
        PyBuffer_Release(&pos);
    if (ptr.obj)
        PyBuffer_Release(&ptr);
    if (aux.obj)
        PyBuffer_Release(&aux);
    return result;
}

/* -- merge -------------------------------------------------------------------------------------------------------- */

typedef struct {
    int pfd, afd;
    uint64_t next, hi;       /* the next record to buffer; the end of the slice */
    uint64_t punched;        /* records before this one were freed on disk */
    unsigned char *pbuf, *abuf;
    size_t blen, bi;         /* records in the buffer; the current one's index there */
    int live;
    uint64_t pos;            /* the current suffix (its LCP with the winner above it is its node's key) */
    uint32_t rl;             /* its record's LCP (LCP_UNKNOWN: none) */
    unsigned char tail[AUX_TAIL + 20]; /* (zero past AUX_TAIL: 8-byte loads from any offset of the tail) */
    uint64_t coff;           /* the corpus bytes cached for it: offsets [coff, coff + clen) of the suffix */
    size_t clen;
    unsigned char *cache;
} Stream;

/* A node of the loser tree: the stream that lost there and its KEY against the suffix that beat it (0: the stream is
 * finished, it loses to any). In the nodes, not the streams: a replay reads only keys while they differ, 16 bytes
 * per level. */
typedef struct {
    uint64_t key;
    int64_t idx;
} Node;

typedef struct {
    int cfd, k, punch;
    uint64_t n;
    Stream *s;
    size_t nstreams, cap; /* records buffered per stream */
    Node *tree;
    size_t leaves;
    unsigned char *scratch; /* 2 x CACHE, for LCPs of two positions */
} Merge;

/* Buffer the stream's next records (or mark it finished). 0, or -1 with errno set. */
static int refill(Merge *m, Stream *s) {
    if (s->next >= s->hi) { /* the slice is consumed: the rest of it freed too (a range's slice of a part may be
                             * shorter than PUNCH_STEP) */
        if (m->punch && s->live) {
            punch_hole(s->pfd, s->punched * (uint64_t)m->k, (s->hi - s->punched) * (uint64_t)m->k);
            punch_hole(s->afd, s->punched * AUX_SIZE, (s->hi - s->punched) * AUX_SIZE);
            s->punched = s->hi;
        }
        s->live = 0;
        return 0;
    }
    size_t count = (size_t)(s->hi - s->next < m->cap ? s->hi - s->next : m->cap);
    if (read_at(s->pfd, s->pbuf, count * (size_t)m->k, s->next * (uint64_t)m->k) < 0 ||
        read_at(s->afd, s->abuf, count * AUX_SIZE, s->next * AUX_SIZE) < 0)
        return -1;
    if (m->punch && s->next - s->punched >= PUNCH_STEP / AUX_SIZE) {
        punch_hole(s->pfd, s->punched * (uint64_t)m->k, (s->next - s->punched) * (uint64_t)m->k);
        punch_hole(s->afd, s->punched * AUX_SIZE, (s->next - s->punched) * AUX_SIZE);
        s->punched = s->next;
    }
    s->next += count;
    s->blen = count, s->bi = 0;
    return 0;
}

/* Make the stream's current suffix the record at bi (refilling first when the buffer is used up). */
static int load(Merge *m, Stream *s) {
    if (s->bi >= s->blen) {
        if (refill(m, s) < 0)
            return -1;
        if (!s->live)
            return 0;
    }
#if defined(__GNUC__)
    __builtin_prefetch(s->abuf + (s->bi + 8) * AUX_SIZE);
    __builtin_prefetch(s->pbuf + (s->bi + 16) * (size_t)m->k);
#endif
    s->pos = get_le(s->pbuf + s->bi * (size_t)m->k, m->k);
    if (s->pos >= m->n) {
        errno = EINVAL;
        return -1;
    }
    const unsigned char *r = s->abuf + s->bi * AUX_SIZE;
    s->rl = (uint32_t)r[0] | (uint32_t)r[1] << 8;
    memcpy(s->tail, r + 2, AUX_TAIL);
    s->clen = 0;
    s->bi++;
    return 0;
}

/* The bytes of the stream's suffix from offset o: *len of them at *p (0: the suffix ends before o). */
static int span(Merge *m, Stream *s, uint64_t o, const unsigned char **p, size_t *len) {
    uint64_t left = s->pos + o < m->n ? m->n - s->pos - o : 0;
    if (!left) {
        *len = 0;
        return 0;
    }
    if (s->rl != LCP_UNKNOWN && o >= s->rl && o < s->rl + AUX_TAIL) {
        *p = s->tail + (o - s->rl);
        *len = (size_t)(s->rl + AUX_TAIL - o);
    } else if (s->clen && o >= s->coff && o < s->coff + s->clen) {
        *p = s->cache + (o - s->coff);
        *len = (size_t)(s->coff + s->clen - o);
    } else {
        size_t want = s->clen && o == s->coff + s->clen ? s->clen * 2 : FIRST_READ;
        if (want > CACHE)
            want = CACHE;
        if (want > left)
            want = (size_t)left;
        if (read_at(m->cfd, s->cache, want, s->pos + o) < 0)
            return -1;
        s->coff = o, s->clen = want;
        *p = s->cache, *len = want;
    }
    if (*len > left)
        *len = (size_t)left;
    return 0;
}

/* Compare the suffixes of a and b, equal on their first o bytes: -1 or 1, *at where they first differ and *lose the
 * later one's byte there (plus one: its symbol). */
static int compare_from(Merge *m, Stream *a, Stream *b, uint64_t o, uint64_t *at, unsigned *lose, int *err) {
    for (;;) {
        const unsigned char *pa = NULL, *pb = NULL;
        size_t la, lb;
        if (span(m, a, o, &pa, &la) < 0 || span(m, b, o, &pb, &lb) < 0) {
            *err = 1;
            return 0;
        }
        if (!la || !lb) { /* a suffix that ends is before any it is a prefix of (both cannot end: distinct) */
            *at = o;
            *lose = la ? pa[0] + 1u : lb ? pb[0] + 1u : 0;
            return la ? 1 : -1;
        }
        size_t l = la < lb ? la : lb, d = mismatch(pa, pb, l);
        if (d < l) {
            *at = o + d;
            *lose = (pa[d] > pb[d] ? pa[d] : pb[d]) + 1u;
            return pa[d] < pb[d] ? -1 : 1;
        }
        o += l;
    }
}

/* The LCP of the suffixes at x and y (distinct), read from the corpus. */
static int lcp_of(Merge *m, uint64_t x, uint64_t y, uint64_t *out) {
    uint64_t o = 0;
    size_t step = FIRST_READ;
    for (;;) {
        uint64_t lx = x + o < m->n ? m->n - x - o : 0, ly = y + o < m->n ? m->n - y - o : 0;
        size_t l = step;
        if (l > lx)
            l = (size_t)lx;
        if (l > ly)
            l = (size_t)ly;
        if (!l) {
            *out = o;
            return 0;
        }
        if (read_at(m->cfd, m->scratch, l, x + o) < 0 || read_at(m->cfd, m->scratch + CACHE, l, y + o) < 0)
            return -1;
        size_t d = mismatch(m->scratch, m->scratch + CACHE, l);
        o += d;
        if (d < l) {
            *out = o;
            return 0;
        }
        if (step < CACHE)
            step *= 2;
    }
}

#if PY_LITTLE_ENDIAN && defined(__GNUC__)
/* The first 8 bytes at p as a big-endian number, only its first l (1 to 8) kept: numbers compare as the bytes do. */
static inline uint64_t head8(const unsigned char *p, size_t l) {
    uint64_t x;
    memcpy(&x, p, 8);
    x = __builtin_bswap64(x);
    return l >= 8 ? x : x & ~(~(uint64_t)0 >> (8 * l));
}
#endif

/* The order of the suffixes of streams a and b (distinct, live), equal on their first h bytes: -1 when a's is
 * first, else 1; *at where they first differ, *lose the later one's symbol there. The records' tails first (both
 * hold offset h on, nearly always), else the corpus. */
static int order(Merge *m, Stream *a, Stream *b, uint64_t h, uint64_t *at, unsigned *lose, int *err) {
    if (a->rl != LCP_UNKNOWN && b->rl != LCP_UNKNOWN && a->rl <= h && h < a->rl + AUX_TAIL && b->rl <= h &&
        h < b->rl + AUX_TAIL && a->pos + a->rl + AUX_TAIL <= m->n && b->pos + b->rl + AUX_TAIL <= m->n) {
        const unsigned char *pa = a->tail + (h - a->rl), *pb = b->tail + (h - b->rl);
        size_t la = (size_t)(a->rl + AUX_TAIL - h), lb = (size_t)(b->rl + AUX_TAIL - h), l = la < lb ? la : lb;
#if PY_LITTLE_ENDIAN && defined(__GNUC__)
        for (size_t o = 0; o < l; o += 8) { /* (the tails are padded: the loads stay inside them) */
            uint64_t x = head8(pa + o, l - o), y = head8(pb + o, l - o);
            if (x != y) {
                int shift = 56 - (__builtin_clzll(x ^ y) & ~7);
                *at = h + o + (size_t)((56 - shift) >> 3);
                *lose = (unsigned)((x > y ? x : y) >> shift & 0xFF) + 1u;
                return x < y ? -1 : 1;
            }
        }
        h += l;
#else
        size_t d = mismatch(pa, pb, l);
        if (d < l) {
            *at = h + d;
            *lose = (pa[d] > pb[d] ? pa[d] : pb[d]) + 1u;
            return pa[d] < pb[d] ? -1 : 1;
        }
        h += l;
#endif
    }
    return compare_from(m, a, b, h, at, lose, err);
}

/* A suffix's key against the one that beat it (or was written last): the longer their LCP h the earlier it comes,
 * then the smaller its symbol at h (its byte plus one, 0 where it ends); a larger key wins, 0 is a finished
 * stream. (h < 2^54: merge() refuses larger corpora.) */
#define KEY(h, sym) ((((uint64_t)(h) + 1) << 9) | (511u - (unsigned)(sym)))

/* The symbol of the stream's suffix at offset h. 0, or -1 with errno set. */
static int sym_at(Merge *m, Stream *s, uint64_t h, unsigned *sym) {
    if (s->pos + h >= m->n) {
        *sym = 0;
    } else if (s->rl != LCP_UNKNOWN && s->rl <= h && h < s->rl + AUX_TAIL) {
        *sym = s->tail[h - s->rl] + 1u;
    } else {
        const unsigned char *p = NULL;
        size_t len = 0;
        if (span(m, s, h, &p, &len) < 0)
            return -1;
        *sym = len ? p[0] + 1u : 0;
    }
    return 0;
}

/* A match between the stream in c and the one in node o, equal keys (the same LCP with the suffix that beat them
 * and the same byte there): the loser, keyed against the winner, stays in o, the winner goes on in c. */
static int play(Merge *m, Node *c, Node *o) {
    uint64_t at = 0;
    unsigned lose = 0;
    int err = 0;
    int r = order(m, &m->s[c->idx], &m->s[o->idx], (c->key >> 9), &at, &lose, &err);
    if (err)
        return -1;
    if (r < 0) {
        o->key = KEY(at, lose);
    } else {
        Node t = *o;
        o->key = KEY(at, lose), o->idx = c->idx;
        *c = t;
    }
    return 0;
}

/* One match at a node: the candidate c against the loser kept there. */
static inline int match(Merge *m, Node *c, Node *o) {
    if (o->key > c->key) {
        Node t = *o;
        *o = *c;
        *c = t;
    } else if (o->key == c->key && c->key) {
        return play(m, c, o);
    }
    return 0;
}

static int build(Merge *m, size_t node, Node *winner) {
    if (node >= m->leaves) {
        size_t i = node - m->leaves;
        unsigned sym = 0;
        if (m->s[i].live && sym_at(m, &m->s[i], 0, &sym) < 0)
            return -1;
        winner->idx = (int64_t)i, winner->key = m->s[i].live ? KEY(0, sym) : 0;
        return 0;
    }
    Node r;
    if (build(m, 2 * node, winner) < 0 || build(m, 2 * node + 1, &r) < 0)
        return -1;
    if (match(m, winner, &r) < 0)
        return -1;
    m->tree[node] = r;
    return 0;
}

/* The merge itself (no Python object touched): the pointers written, or -1 with errno set. */
static int64_t run_merge(Merge *m, int ofd, uint64_t out_at, unsigned char *obuf, size_t ocap) {
    uint64_t written = 0;
    size_t olen = 0;
    for (size_t i = 0; i < m->nstreams; i++) {
        Stream *s = &m->s[i];
        if (s->live && load(m, s) < 0)
            return -1;
    }
    Node c;
    if (build(m, 1, &c) < 0)
        return -1;
    while (c.key) {
        Stream *s = &m->s[c.idx];
        put_le(obuf + olen * (size_t)m->k, s->pos, m->k);
        if (++olen == ocap) {
            if (write_at(ofd, obuf, olen * (size_t)m->k, (out_at + written) * (uint64_t)m->k) < 0)
                return -1;
            written += olen, olen = 0;
        }
        uint64_t before = s->pos, h = 0;
        unsigned sym = 0;
        if (load(m, s) < 0)
            return -1;
        if (s->live) {
            if (s->rl != LCP_UNKNOWN)
                h = s->rl;
            else if (lcp_of(m, s->pos, before, &h) < 0)
                return -1;
            if (sym_at(m, s, h, &sym) < 0)
                return -1;
        }
        c.key = s->live ? KEY(h, sym) : 0;
        for (size_t node = (m->leaves + (size_t)c.idx) / 2; node >= 1; node /= 2)
            if (match(m, &c, &m->tree[node]) < 0)
                return -1;
    }
    if (olen && write_at(ofd, obuf, olen * (size_t)m->k, (out_at + written) * (uint64_t)m->k) < 0)
        return -1;
    return (int64_t)(written + olen);
}

/* A sequence of ints read whole into a new C array (a tuple copy first: an element's __index__, Python code,
 * cannot change what is read). */
static long long *ints(PyObject *seq, Py_ssize_t *count, const char *name) {
    PyObject *tuple = PySequence_Tuple(seq);
    if (!tuple) {
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of ints", name);
        return NULL;
    }
    Py_ssize_t len = PyTuple_GET_SIZE(tuple);
    long long *out = PyMem_New(long long, len ? (size_t)len : 1);
    if (!out) {
        Py_DECREF(tuple);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(out);
            Py_DECREF(tuple);
            return NULL;
        }
    }
    Py_DECREF(tuple);
    *count = len;
    return out;
}

static PyObject *merge(PyObject *self, PyObject *args) {
    int cfd, k, ofd, punch;
    long long n, out_at, buffer;
    PyObject *pf_o, *af_o, *lo_o, *hi_o;
    (void)self;
    if (!PyArg_ParseTuple(args, "iLiOOOOiLLp", &cfd, &n, &k, &pf_o, &af_o, &lo_o, &hi_o, &ofd, &out_at, &buffer,
                          &punch))
        return NULL;
    if (k < 1 || k > 8)
        return PyErr_Format(PyExc_ValueError, "k must be 1 to 8, not %d", k);
    if (n < 1 || n >= (1LL << 54) || out_at < 0 || buffer < 0 || cfd < 0 || ofd < 0)
        return PyErr_Format(PyExc_ValueError, "n must be 1 to 2^54 - 1; out_at, buffer and the fds >= 0");
    long long *pf = NULL, *af = NULL, *lo = NULL, *hi = NULL;
    Py_ssize_t npf = 0, naf = 0, nlo = 0, nhi = 0;
    Merge m = {0};
    unsigned char *obuf = NULL, *pool = NULL;
    PyObject *result = NULL;
    if (!(pf = ints(pf_o, &npf, "ptr_fds")) || !(af = ints(af_o, &naf, "aux_fds")) || !(lo = ints(lo_o, &nlo, "los")) ||
        !(hi = ints(hi_o, &nhi, "his")))
        goto done;
    if (npf != naf || npf != nlo || npf != nhi || npf < 1 || npf > (1 << 20)) {
        PyErr_SetString(PyExc_ValueError, "ptr_fds, aux_fds, los and his: one entry per part (1 to 2^20 parts)");
        goto done;
    }
    for (Py_ssize_t i = 0; i < npf; i++)
        if (pf[i] < 0 || pf[i] > INT32_MAX || af[i] < 0 || af[i] > INT32_MAX || lo[i] < 0 || hi[i] < lo[i] ||
            (uint64_t)hi[i] > UINT64_MAX / 16) {
            PyErr_Format(PyExc_ValueError, "part %zd: bad fd or slice [%lld, %lld)", i, lo[i], hi[i]);
            goto done;
        }
    m.cfd = cfd, m.k = k, m.punch = punch, m.n = (uint64_t)n, m.nstreams = (size_t)npf;
    m.leaves = 1;
    while (m.leaves < m.nstreams)
        m.leaves *= 2;
    size_t per = (size_t)k + AUX_SIZE;
    m.cap = (size_t)buffer / per / m.nstreams;
    uint64_t longest = 0; /* (no more records buffered than the longest slice holds) */
    for (Py_ssize_t i = 0; i < npf; i++)
        if ((uint64_t)(hi[i] - lo[i]) > longest)
            longest = (uint64_t)(hi[i] - lo[i]);
    if (m.cap > longest)
        m.cap = (size_t)longest;
    if (m.cap < 64)
        m.cap = 64;
    /* one pool: each stream's records and cache; overflow-checked */
    size_t each = m.cap * per + CACHE;
    if (m.cap > SIZE_MAX / per / 2 || each > SIZE_MAX / m.leaves) {
        PyErr_NoMemory();
        goto done;
    }
    pool = PyMem_Malloc(each * m.nstreams + 2 * CACHE);
    m.s = PyMem_Calloc(m.leaves, sizeof(Stream));
    m.tree = PyMem_Calloc(m.leaves, sizeof(Node));
    size_t ocap = (1 << 20) / (size_t)k;
    obuf = PyMem_Malloc(ocap * (size_t)k);
    if (!pool || !m.s || !m.tree || !obuf) {
        PyErr_NoMemory();
        goto done;
    }
    m.scratch = pool + each * m.nstreams;
    for (size_t i = 0; i < m.nstreams; i++) {
        Stream *s = &m.s[i];
        s->pfd = (int)pf[i], s->afd = (int)af[i];
        s->next = s->punched = (uint64_t)lo[i], s->hi = (uint64_t)hi[i];
        s->pbuf = pool + each * i, s->abuf = s->pbuf + m.cap * (size_t)k, s->cache = s->abuf + m.cap * AUX_SIZE;
        s->live = 1;
    }
    int64_t count;
    int saved = 0;
    Py_BEGIN_ALLOW_THREADS
    count = run_merge(&m, ofd, (uint64_t)out_at, obuf, ocap);
    saved = errno;
    Py_END_ALLOW_THREADS
    if (count < 0) {
        errno = saved;
        if (saved == EINVAL)
            PyErr_SetString(PyExc_ValueError, "a part holds a pointer past the corpus's end");
        else
            PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    result = PyLong_FromLongLong(count);
done:
    PyMem_Free(pf);
    PyMem_Free(af);
    PyMem_Free(lo);
    PyMem_Free(hi);
    PyMem_Free(pool);
    PyMem_Free(m.s);
    PyMem_Free(m.tree);
    PyMem_Free(obuf);
    return result;
}

static PyMethodDef methods[] = {
    {"part_records", part_records, METH_VARARGS,
     "part_records(win, pos, start, k, at_end, ptr_out, aux_out, prev): a sorted part's pointers and records; "
     "the indices whose order the window could not decide."},
    {"merge", merge, METH_VARARGS,
     "merge(corpus_fd, n, k, ptr_fds, aux_fds, los, his, out_fd, out_at, buffer, punch): the parts' slices merged "
     "into suffix order, written at pointer out_at of out_fd; the pointers written."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", "infini-gram's out-of-core suffix array in C.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&module); }

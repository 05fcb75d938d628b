/* Shape keys of a buffer of lines, counted in one native pass.
 *
 * The batch engine's `summary` needs, per chunk, every line's shape key (ASCII digits 1-9 made
 * 0, then the hex letters of each `0x[0-9a-f]{4,}` pointer made 0: `shape_keys.line_keys`),
 * and per distinct key its count and first and last line. In Python that is translate, a regex
 * split, join, split and a Counter: five passes over the bytes and a list of a million keys.
 * Here each line is shaped into a small buffer that stays in cache, hashed and counted, with
 * the GIL released so that other threads (the semantic tier's loader) run meanwhile.
 *
 * tally(data: bytes) -> (keys: list[bytes], counts: list[int], first: list[int],
 *                        last: list[int], ids: bytes, starts: bytes)
 * Lines are those of data.split(b"\n"); keys are in order of first appearance; ids holds one
 * native uint32 per line, the index of its key; starts one native int64 per line, where it
 * begins in data, and one more, len(data) + 1, so that line i is data[starts[i]:starts[i+1]-1].
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash;
    Py_ssize_t offset; /* of its shaped bytes in the arena */
    Py_ssize_t length;
    Py_ssize_t count;
    Py_ssize_t first;
    Py_ssize_t last;
} Key;

typedef struct {
    Key *keys;
    Py_ssize_t n_keys;
    Py_ssize_t cap_keys;
    int32_t *slots; /* -1 = empty, else index into keys */
    size_t mask;
    unsigned char *arena; /* the shaped bytes of every distinct key, back to back */
    Py_ssize_t arena_used;
    Py_ssize_t arena_cap;
} Table;

static int is_hex(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* One line's shape: digits 1-9 -> '0' (the loop vectorizes), then each pointer's letters ->
 * '0', matching the leftmost, greedy, non-overlapping matches of re.split(rb"(0x[0-9a-f]{4,})").
 * Pointers never span lines, so shaping line by line equals shaping the whole buffer. */
static void shape(const unsigned char *src, unsigned char *dst, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = src[i];
        dst[i] = (unsigned char)(c - '1') < 9 ? '0' : c;
    }
    Py_ssize_t start = 0; /* where the next match may begin */
    while (start + 1 < n) {
        const unsigned char *x = memchr(dst + start + 1, 'x', (size_t)(n - start - 1));
        if (x == NULL)
            return;
        Py_ssize_t p = x - dst;
        if (dst[p - 1] != '0') {
            start = p;
            continue;
        }
        Py_ssize_t j = p + 1;
        while (j < n && is_hex(dst[j]))
            j++;
        if (j - (p + 1) >= 4) {
            for (Py_ssize_t k = p + 1; k < j; k++)
                if (dst[k] >= 'a')
                    dst[k] = '0';
            start = j;
        } else {
            start = p + 1;
        }
    }
}

static uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    memcpy(&w, s + i, (size_t)(n - i));
    h = (h ^ w) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h;
}

static int grow(Table *t) {
    size_t size = (t->mask + 1) * 2;
    int32_t *slots = malloc(size * sizeof(int32_t));
    if (slots == NULL)
        return -1;
    memset(slots, 0xff, size * sizeof(int32_t));
    for (Py_ssize_t k = 0; k < t->n_keys; k++) {
        size_t s = (size_t)t->keys[k].hash & (size - 1);
        while (slots[s] != -1)
            s = (s + 1) & (size - 1);
        slots[s] = (int32_t)k;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    return 0;
}

/* The key index of the shaped line `line` (length bytes), added if new; -1 when out of memory. */
static Py_ssize_t lookup(Table *t, const unsigned char *line, Py_ssize_t length, Py_ssize_t number) {
    uint64_t h = hash_bytes(line, length);
    size_t s = (size_t)h & t->mask;
    for (;;) {
        int32_t k = t->slots[s];
        if (k == -1)
            break;
        Key *key = &t->keys[k];
        if (key->hash == h && key->length == length && memcmp(t->arena + key->offset, line, (size_t)length) == 0) {
            key->count++;
            key->last = number;
            return k;
        }
        s = (s + 1) & t->mask;
    }
    if (t->n_keys == t->cap_keys) {
        Py_ssize_t cap = t->cap_keys * 2;
        Key *keys = realloc(t->keys, (size_t)cap * sizeof(Key));
        if (keys == NULL)
            return -1;
        t->keys = keys;
        t->cap_keys = cap;
    }
    if (t->arena_used + length > t->arena_cap) {
        Py_ssize_t cap = (t->arena_cap + length) * 2;
        unsigned char *arena = realloc(t->arena, (size_t)cap);
        if (arena == NULL)
            return -1;
        t->arena = arena;
        t->arena_cap = cap;
    }
    memcpy(t->arena + t->arena_used, line, (size_t)length);
    Py_ssize_t k = t->n_keys++;
    t->keys[k] = (Key){h, t->arena_used, length, 1, number, number};
    t->arena_used += length;
    t->slots[s] = (int32_t)k;
    if ((size_t)t->n_keys * 2 > t->mask + 1 && grow(t) < 0)
        return -1;
    return k;
}

typedef struct {
    uint32_t *ids;
    int64_t *starts;
    Py_ssize_t cap; /* lines ids can hold; starts holds one more */
} Lines;

static int reserve(Lines *l, Py_ssize_t need) {
    if (need <= l->cap)
        return 0;
    Py_ssize_t cap = l->cap * 2 > need ? l->cap * 2 : need;
    uint32_t *ids = realloc(l->ids, (size_t)cap * sizeof(uint32_t));
    if (ids != NULL)
        l->ids = ids;
    int64_t *starts = realloc(l->starts, (size_t)(cap + 1) * sizeof(int64_t));
    if (starts != NULL)
        l->starts = starts;
    if (ids == NULL || starts == NULL)
        return -1;
    l->cap = cap;
    return 0;
}

/* Fill l (one id and start per line) and the table; the number of lines, or -1 when out of
 * memory or past UINT32 lines. Lines are found as they are hashed: one pass over buf. */
static Py_ssize_t count_lines(const unsigned char *buf, Py_ssize_t n, Lines *l, Table *t) {
    Py_ssize_t number = 0, offset = 0, room = 256;
    unsigned char *line = malloc((size_t)room);
    if (line == NULL)
        return -1;
    for (;;) {
        const unsigned char *nl = memchr(buf + offset, '\n', (size_t)(n - offset));
        Py_ssize_t end = nl ? nl - buf : n, length = end - offset;
        if (length > room) {
            room = length * 2 + 256;
            free(line);
            line = malloc((size_t)room);
            if (line == NULL)
                return -1;
        }
        shape(buf + offset, line, length);
        Py_ssize_t k = lookup(t, line, length, number);
        if (k < 0 || number >= (Py_ssize_t)INT32_MAX || reserve(l, number + 1) < 0) {
            free(line);
            return -1;
        }
        l->starts[number] = offset;
        l->ids[number++] = (uint32_t)k;
        if (nl == NULL) {
            l->starts[number] = n + 1;
            free(line);
            return number;
        }
        offset = end + 1;
    }
}

static PyObject *tally(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *src = view.buf;
    Py_ssize_t n = view.len;
    Py_ssize_t guess = n / 128 + 16; /* log lines are rarely shorter */
    Lines l = {malloc((size_t)guess * sizeof(uint32_t)), malloc((size_t)(guess + 1) * sizeof(int64_t)), guess};
    Table t = {malloc(64 * sizeof(Key)), 0, 64, malloc(128 * sizeof(int32_t)), 127, malloc(4096), 0, 4096};
    Py_ssize_t lines = -1;
    if (l.ids && l.starts && t.keys && t.slots && t.arena) {
        memset(t.slots, 0xff, 128 * sizeof(int32_t));
        Py_BEGIN_ALLOW_THREADS
        lines = count_lines(src, n, &l, &t);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    PyObject *result = NULL, *ids = NULL, *starts = NULL;
    if (lines < 0) {
        PyErr_NoMemory();
        goto done;
    }
    ids = PyBytes_FromStringAndSize((const char *)l.ids, lines * (Py_ssize_t)sizeof(uint32_t));
    starts = PyBytes_FromStringAndSize((const char *)l.starts, (lines + 1) * (Py_ssize_t)sizeof(int64_t));
    PyObject *keys = PyList_New(t.n_keys), *counts = PyList_New(t.n_keys);
    PyObject *first = PyList_New(t.n_keys), *last = PyList_New(t.n_keys);
    if (ids && starts && keys && counts && first && last) {
        Py_ssize_t k = 0;
        for (; k < t.n_keys; k++) {
            Key *key = &t.keys[k];
            PyObject *b = PyBytes_FromStringAndSize((const char *)t.arena + key->offset, key->length);
            PyObject *c = PyLong_FromSsize_t(key->count);
            PyObject *f = PyLong_FromSsize_t(key->first);
            PyObject *z = PyLong_FromSsize_t(key->last);
            if (!b || !c || !f || !z) {
                Py_XDECREF(b); Py_XDECREF(c); Py_XDECREF(f); Py_XDECREF(z);
                break;
            }
            PyList_SET_ITEM(keys, k, b);
            PyList_SET_ITEM(counts, k, c);
            PyList_SET_ITEM(first, k, f);
            PyList_SET_ITEM(last, k, z);
        }
        if (k == t.n_keys)
            result = PyTuple_Pack(6, keys, counts, first, last, ids, starts);
    }
    Py_XDECREF(keys); Py_XDECREF(counts); Py_XDECREF(first); Py_XDECREF(last);
done:
    Py_XDECREF(ids);
    Py_XDECREF(starts);
    free(l.ids);
    free(l.starts);
    free(t.keys);
    free(t.slots);
    free(t.arena);
    return result;
}

/* Whether some 'x' follows a digit 1-9: then the shapes' "0x" may hide "1x"..."9x", which a
 * pointer fold must not take for a pointer (the engine's ZERO_X hazard). memchr finds the
 * few 'x' of a log without the 227 MB of temporary arrays that numpy compares would need. */
static PyObject *digit_before_x(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = view.buf, *p = buf + 1;
    const unsigned char *end = buf + view.len;
    int found = 0;
    Py_BEGIN_ALLOW_THREADS
    while (p < end && (p = memchr(p, 'x', (size_t)(end - p))) != NULL) {
        if ((unsigned char)(p[-1] - '1') < 9) {
            found = 1;
            break;
        }
        p++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"digit_before_x", digit_before_x, METH_O, "digit_before_x(data) -> bool: some 'x' follows a digit 1-9."},
    {"tally", tally, METH_O, "tally(data) -> (keys, counts, first, last, ids, starts): shape keys of data's lines, counted."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shape_tally", NULL, -1, methods};

PyMODINIT_FUNC PyInit__shape_tally(void) { return PyModule_Create(&module); }

/* The content index's native part (index/grams.py loads it through ctypes).

   What it does, all of it pure computation on memory the caller owns or that it allocates itself:
   - a builder: the distinct byte trigrams of each file (document) fed to it in pieces, gathered into
     postings in memory (per trigram, the documents holding it as delta-encoded varints), handed back
     in trigram order;
   - decoding one posting list, checked: a list that is not exactly what a writer writes (a varint past
     its end, a document out of order or out of its segment's range, bytes left over) is an error, never
     a read outside the buffer;
   - intersection and union of sorted document lists, and the merge of several segments' postings.

   Rules: C99 and the C library only: no Python API, no operating-system calls, no files (the caller
   reads and writes them), no global state (one builder per thread). Every function that reads bytes
   from disk checks every length it is given. Built by scripts/build-native with `cc` (Linux, macOS) or
   `x86_64-w64-mingw32-gcc` (Windows); the ABI number below changes with any change of a signature. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

#define ABI 3

EXPORT int32_t dg_abi(void) { return ABI; }

/* ---- varints ------------------------------------------------------------------------------------ */

static size_t put_varint(uint8_t *p, uint32_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* One varint at *pos of buf[0..len); 0 on a varint that runs past the end or past 32 bits. */
static int get_varint(const uint8_t *buf, size_t len, size_t *pos, uint32_t *out) {
    uint32_t v = 0;
    unsigned shift = 0;
    size_t p = *pos;
    for (;;) {
        if (p >= len || shift > 28) return 0;
        uint8_t byte = buf[p++];
        if (shift == 28 && (byte & 0x70)) return 0;
        v |= (uint32_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) break;
        shift += 7;
    }
    *pos = p;
    *out = v;
    return 1;
}

/* ---- the builder ---------------------------------------------------------------------------------- */

#define CHUNK_SHIFT 20 /* the arena is made of 1 MiB chunks; a block never straddles two */
#define CHUNK_SIZE ((size_t)1 << CHUNK_SHIFT)
#define FIRST_BLOCK 16
#define LAST_BLOCK 256

typedef struct {
    uint32_t gram, count, last; /* the trigram, its documents so far, the last of them */
    uint32_t head, tail;        /* block references: chunk << CHUNK_SHIFT | offset */
    uint16_t used, cap;         /* bytes used in the tail block's data, the tail block's size */
} entry;

typedef struct {
    uint64_t *seen;   /* 2^24 bits: the trigrams of the current document */
    uint32_t *fresh;  /* the trigrams first seen in the current document */
    size_t nfresh, capfresh;
    uint32_t doc, gram;
    int open, have; /* a document is open; how many of its bytes `gram` holds (up to 3) */
    uint32_t *table; /* open addressing: entry index + 1; 0 = empty */
    uint32_t mask;
    entry *entries;
    size_t nentries, capentries;
    uint8_t **chunks; /* the arena: nchunks in use, nalloc allocated (kept across dg_reset) */
    size_t nchunks, nalloc, capchunks, chunk_used;
    uint64_t pairs;
    /* handing the postings back, in trigram order */
    uint32_t *order;
    size_t norder, next;  /* the entry being read, by its rank */
    uint32_t block;       /* the block being read in it, its size, and how far */
    size_t block_cap, block_pos;
    int failed;
} builder;

EXPORT void dg_builder_free(builder *b) {
    if (!b) return;
    free(b->seen);
    free(b->fresh);
    free(b->table);
    free(b->entries);
    for (size_t i = 0; i < b->nalloc; i++) free(b->chunks[i]);
    free(b->chunks);
    free(b->order);
    free(b);
}

EXPORT builder *dg_builder_new(void) {
    builder *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->seen = calloc((size_t)1 << 18, sizeof(uint64_t));
    b->capfresh = 4096;
    b->fresh = malloc(b->capfresh * sizeof(uint32_t));
    b->mask = (1u << 16) - 1;
    b->table = calloc((size_t)b->mask + 1, sizeof(uint32_t));
    if (!b->seen || !b->fresh || !b->table) {
        dg_builder_free(b);
        return NULL;
    }
    return b;
}

static uint8_t *block_at(builder *b, uint32_t ref) {
    return b->chunks[ref >> CHUNK_SHIFT] + (ref & (CHUNK_SIZE - 1));
}

/* A new block of `size` bytes (4 of them the reference to the next one), or 0 when out of memory
   (reference 0 is the first chunk's first block, which is never handed out: the arena starts at 16). */
static uint32_t new_block(builder *b, size_t size) {
    if (b->nchunks == 0 || b->chunk_used + size > CHUNK_SIZE) {
        if (b->nchunks >= ((size_t)1 << (32 - CHUNK_SHIFT))) return 0;
        if (b->nchunks == b->nalloc) {
            if (b->nalloc == b->capchunks) {
                size_t cap = b->capchunks ? b->capchunks * 2 : 16;
                uint8_t **chunks = realloc(b->chunks, cap * sizeof *chunks);
                if (!chunks) return 0;
                b->chunks = chunks;
                b->capchunks = cap;
            }
            uint8_t *chunk = malloc(CHUNK_SIZE);
            if (!chunk) return 0;
            b->chunks[b->nalloc++] = chunk;
        }
        b->nchunks++;
        b->chunk_used = b->nchunks == 1 ? 16 : 0;
    }
    uint32_t ref = (uint32_t)(((b->nchunks - 1) << CHUNK_SHIFT) | b->chunk_used);
    b->chunk_used += size;
    memset(block_at(b, ref), 0, 4);
    return ref;
}

static inline uint32_t hash(uint32_t g, uint32_t mask) { return (g * 2654435761u >> 8) & mask; }

static int grow_table(builder *b) {
    uint32_t mask = b->mask * 2 + 1;
    uint32_t *table = calloc((size_t)mask + 1, sizeof(uint32_t));
    if (!table) return 0;
    for (size_t i = 0; i < b->nentries; i++) {
        uint32_t h = hash(b->entries[i].gram, mask);
        while (table[h]) h = (h + 1) & mask;
        table[h] = (uint32_t)i + 1;
    }
    free(b->table);
    b->table = table;
    b->mask = mask;
    return 1;
}

/* The index of the trigram's entry, made if new; -1 when out of memory. */
static int64_t find(builder *b, uint32_t g) {
    uint32_t h = hash(g, b->mask);
    for (;;) {
        uint32_t at = b->table[h];
        if (!at) break;
        if (b->entries[at - 1].gram == g) return (int64_t)at - 1;
        h = (h + 1) & b->mask;
    }
    if ((b->nentries + 1) * 2 > (size_t)b->mask + 1) {
        if (!grow_table(b)) return -1;
        return find(b, g);
    }
    if (b->nentries == b->capentries) {
        size_t cap = b->capentries ? b->capentries + b->capentries / 2 : 4096;
        entry *entries = realloc(b->entries, cap * sizeof *entries);
        if (!entries) return -1;
        b->entries = entries;
        b->capentries = cap;
    }
    uint32_t ref = new_block(b, FIRST_BLOCK);
    if (!ref) return -1;
    entry *e = &b->entries[b->nentries++];
    e->gram = g;
    e->count = 0;
    e->last = 0;
    e->head = e->tail = ref;
    e->used = 0;
    e->cap = FIRST_BLOCK;
    b->table[h] = (uint32_t)b->nentries;
    return (int64_t)b->nentries - 1;
}

static int append(builder *b, entry *e, uint32_t doc) {
    uint8_t bytes[5];
    size_t n = put_varint(bytes, doc - e->last);
    for (size_t i = 0; i < n; i++) {
        if (e->used == e->cap - 4) {
            uint16_t cap = e->cap < LAST_BLOCK ? (uint16_t)(e->cap * 2) : (uint16_t)LAST_BLOCK;
            uint32_t ref = new_block(b, cap);
            if (!ref) return 0;
            memcpy(block_at(b, e->tail), &ref, 4);
            e->tail = ref;
            e->used = 0;
            e->cap = cap;
        }
        block_at(b, e->tail)[4 + e->used++] = bytes[i];
    }
    e->last = doc;
    e->count++;
    b->pairs++;
    return 1;
}

/* Begin document `doc` (greater than every document begun before on this builder). */
EXPORT int dg_begin(builder *b, uint32_t doc) {
    if (b->failed || b->open || b->order) return -1;
    b->doc = doc;
    b->open = 1;
    b->have = 0;
    b->gram = 0;
    return 0;
}

/* The next piece of the open document's bytes (a trigram may span two pieces). */
EXPORT int dg_add(builder *b, const uint8_t *data, size_t len) {
    if (b->failed || !b->open) return -1;
    if (b->nfresh + len > b->capfresh) { /* room for every window of this piece: no test in the loop */
        size_t cap = b->capfresh;
        while (cap < b->nfresh + len) cap *= 2;
        uint32_t *fresh = realloc(b->fresh, cap * sizeof(uint32_t));
        if (!fresh) {
            b->failed = 1;
            return -1;
        }
        b->fresh = fresh;
        b->capfresh = cap;
    }
    uint64_t *seen = b->seen;
    uint32_t *fresh = b->fresh;
    size_t n = b->nfresh;
    uint32_t g = b->gram;
    size_t i = 0;
    for (; i < len && b->have < 2; i++) {
        g = ((g << 8) | data[i]) & 0xffffff;
        b->have++;
    }
    for (; i < len; i++) {
        g = ((g << 8) | data[i]) & 0xffffff;
        uint32_t s = g;
        uint64_t word = seen[s >> 6], bit = (uint64_t)1 << (s & 63);
        fresh[n] = g;
        n += !(word & bit);
        seen[s >> 6] = word | bit;
    }
    b->nfresh = n;
    b->gram = g;
    return 0;
}

/* End the open document: its distinct trigrams join the postings. Returns how many it has. */
EXPORT int64_t dg_end(builder *b) {
    if (b->failed || !b->open) return -1;
    size_t n = b->nfresh;
    uint32_t *fresh = b->fresh;
    for (size_t i = 0; i < n; i++) {
        uint32_t s = fresh[i];
        b->seen[s >> 6] &= ~((uint64_t)1 << (s & 63));
    }
    /* Three steps per trigram, each a few trigrams behind the one before, so that the memory each needs
       is being fetched while the others work: the table's slot, the entry, the entry's tail block. */
    enum { AHEAD = 8, RING = 32 };
    int64_t index[RING];
    for (size_t i = 0; i < n + 3 * AHEAD; i++) {
        if (i < n) __builtin_prefetch(&b->table[hash(fresh[i], b->mask)]);
        if (i >= AHEAD && i - AHEAD < n) {
            int64_t at = find(b, fresh[i - AHEAD]);
            if (at < 0) {
                b->failed = 1;
                return -1;
            }
            index[(i - AHEAD) % RING] = at;
            __builtin_prefetch(&b->entries[at]);
        }
        if (i >= 2 * AHEAD && i - 2 * AHEAD < n) {
            entry *e = &b->entries[index[(i - 2 * AHEAD) % RING]];
            __builtin_prefetch(block_at(b, e->tail) + 4 + e->used, 1);
        }
        if (i >= 3 * AHEAD && i - 3 * AHEAD < n) {
            if (!append(b, &b->entries[index[(i - 3 * AHEAD) % RING]], b->doc)) {
                b->failed = 1;
                return -1;
            }
        }
    }
    b->nfresh = 0;
    b->open = 0;
    return (int64_t)n;
}

/* Drop the open document (it could not be read cleanly): nothing of it joins the postings. */
EXPORT void dg_abandon(builder *b) {
    for (size_t i = 0; i < b->nfresh; i++) {
        uint32_t s = b->fresh[i];
        b->seen[s >> 6] &= ~((uint64_t)1 << (s & 63));
    }
    b->nfresh = 0;
    b->open = 0;
}

/* Memory the postings use now, in bytes: the arena's chunks in use and the entries and table slots of
   the trigrams seen (what grows with the documents; the caller writes a segment past its budget). */
EXPORT uint64_t dg_memory(const builder *b) {
    return (uint64_t)b->nchunks * CHUNK_SIZE + (uint64_t)b->nentries * (sizeof(entry) + 2 * sizeof(uint32_t));
}

EXPORT uint64_t dg_pairs(const builder *b) { return b->pairs; }
EXPORT uint64_t dg_grams(const builder *b) { return b->nentries; }

/* Sort the entries by trigram (two passes of a 12-bit radix sort over their indexes) and fill the
   directory: for each trigram in order, its document count and the length of its list in bytes.
   After this the postings are read with dg_read; no document can be added until dg_reset. */
EXPORT int dg_directory(builder *b, uint32_t *grams, uint32_t *counts, uint64_t *lens) {
    if (b->failed || b->open) return -1;
    size_t n = b->nentries;
    uint32_t *a = malloc((n + 1) * sizeof(uint32_t));
    uint32_t *t = malloc((n + 1) * sizeof(uint32_t));
    size_t *hist = calloc(4097, sizeof(size_t));
    if (!a || !t || !hist) {
        free(a);
        free(t);
        free(hist);
        return -1;
    }
    for (size_t i = 0; i < n; i++) a[i] = (uint32_t)i;
    for (int pass = 0; pass < 2; pass++) {
        unsigned shift = pass * 12;
        memset(hist, 0, 4097 * sizeof(size_t));
        for (size_t i = 0; i < n; i++) hist[((b->entries[a[i]].gram >> shift) & 0xfff) + 1]++;
        for (size_t i = 1; i <= 4096; i++) hist[i] += hist[i - 1];
        for (size_t i = 0; i < n; i++) t[hist[(b->entries[a[i]].gram >> shift) & 0xfff]++] = a[i];
        uint32_t *swap = a;
        a = t;
        t = swap;
    }
    free(t);
    free(hist);
    for (size_t i = 0; i < n; i++) {
        entry *e = &b->entries[a[i]];
        grams[i] = e->gram;
        counts[i] = e->count;
        /* every block but the tail is full */
        uint64_t len = 0;
        uint32_t ref = e->head;
        uint16_t cap = FIRST_BLOCK;
        while (ref != e->tail) {
            len += cap - 4;
            memcpy(&ref, block_at(b, ref), 4);
            cap = cap < LAST_BLOCK ? (uint16_t)(cap * 2) : (uint16_t)LAST_BLOCK;
        }
        lens[i] = len + e->used;
    }
    b->order = a;
    b->norder = n;
    b->next = 0;
    b->block = n ? b->entries[a[0]].head : 0;
    b->block_cap = FIRST_BLOCK;
    b->block_pos = 0;
    return 0;
}

/* The next bytes of the postings, in the directory's order: up to `cap`; 0 at the end. */
EXPORT int64_t dg_read(builder *b, uint8_t *out, size_t cap) {
    if (!b->order) return -1;
    size_t written = 0;
    while (written < cap && b->next < b->norder) {
        entry *e = &b->entries[b->order[b->next]];
        uint8_t *block = block_at(b, b->block);
        size_t size = b->block == e->tail ? (size_t)e->used : b->block_cap - 4;
        size_t take = size - b->block_pos;
        if (take > cap - written) take = cap - written;
        memcpy(out + written, block + 4 + b->block_pos, take);
        written += take;
        b->block_pos += take;
        if (b->block_pos == size) {
            b->block_pos = 0;
            if (b->block == e->tail) {
                b->next++;
                if (b->next < b->norder) b->block = b->entries[b->order[b->next]].head;
                b->block_cap = FIRST_BLOCK;
            } else {
                memcpy(&b->block, block, 4);
                b->block_cap = b->block_cap < LAST_BLOCK ? b->block_cap * 2 : LAST_BLOCK;
            }
        }
    }
    return (int64_t)written;
}

/* Forget every posting (after they were read): the builder starts a new segment, in the memory it has
   (a build writes one segment after another: no page is given back and asked for again). */
EXPORT void dg_reset(builder *b) {
    b->nchunks = b->chunk_used = 0;
    b->nentries = 0;
    free(b->order);
    b->order = NULL;
    b->norder = b->next = 0;
    b->pairs = 0;
    memset(b->table, 0, ((size_t)b->mask + 1) * sizeof(uint32_t));
}

/* Forget every posting and give back the memory they held (at the end of a batch). */
EXPORT void dg_release(builder *b) {
    dg_reset(b);
    for (size_t i = 0; i < b->nalloc; i++) free(b->chunks[i]);
    free(b->chunks);
    b->chunks = NULL;
    b->nalloc = b->capchunks = 0;
    free(b->entries);
    b->entries = NULL;
    b->capentries = 0;
    uint32_t *table = calloc((size_t)1 << 16, sizeof(uint32_t));
    if (table) {
        free(b->table);
        b->table = table;
        b->mask = (1u << 16) - 1;
    }
    if (b->capfresh > 4096) {
        uint32_t *fresh = realloc(b->fresh, 4096 * sizeof(uint32_t));
        if (fresh) {
            b->fresh = fresh;
            b->capfresh = 4096;
        }
    }
}

/* ---- reading postings ----------------------------------------------------------------------------- */

/* Decode one list of `count` documents from buf[0..len) into out: each document in [lo, hi] and
   greater than the one before, every byte used. 0, or -1 when the list is not one a writer writes. */
EXPORT int dg_decode(const uint8_t *buf, size_t len, uint32_t count, uint32_t lo, uint32_t hi, uint32_t *out) {
    size_t pos = 0;
    uint32_t doc = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t delta;
        if (!get_varint(buf, len, &pos, &delta) || delta == 0 || delta > UINT32_MAX - doc) return -1;
        doc += delta;
        if (doc < lo || doc > hi) return -1;
        out[i] = doc;
    }
    return pos == len ? 0 : -1;
}

/* The documents of the sorted a[0..na) that the encoded list buf[0..len) of `count` documents in
   [lo, hi] holds too, written to out (which may be `a` itself: it is written behind where it is read);
   their number, or -1 when the part of the list read is not one a writer writes. A lookup's AND: the
   list is read once, without being decoded into memory, and only up to a's last document. */
EXPORT int64_t dg_and_encoded(const uint32_t *a, size_t na, const uint8_t *buf, size_t len, uint32_t count,
                              uint32_t lo, uint32_t hi, uint32_t *out) {
    size_t pos = 0, i = 0, n = 0;
    uint32_t doc = 0;
    if (!na) return 0;
    for (uint32_t c = 0; c < count; c++) {
        uint32_t delta;
        if (pos < len && buf[pos] < 0x80) { /* the common case: a gap below 128 */
            delta = buf[pos++];
        } else if (!get_varint(buf, len, &pos, &delta)) {
            return -1;
        }
        if (delta == 0 || delta > UINT32_MAX - doc) return -1;
        doc += delta;
        if (doc < lo || doc > hi) return -1;
        while (a[i] < doc)
            if (++i == na) return (int64_t)n;
        if (a[i] == doc) {
            out[n++] = doc;
            if (++i == na) return (int64_t)n;
        }
    }
    return pos == len ? (int64_t)n : -1;
}

/* The documents that all k encoded lists hold: list i is bufs[i][0..lens[i]) of counts[i] documents in
   [lo, hi], the shortest first (its count is out's capacity). The first is decoded into out, each next
   one read against what is left (dg_and_encoded), and reading stops once nothing is — or, with `ratio`
   (0: never), once what is left is fewer than a ratio-th of the next list's documents: a list is decoded
   from its start, so a long one costs its length to remove the few candidates it still could, which
   ripgrep reads in less (any subset of the lists is a sound answer: it holds every document the whole
   AND holds). The number of documents in out, or -1 when a list (as far as it was read) is not one a
   writer writes. */
EXPORT int64_t dg_all_of(size_t k, const uint8_t *const *bufs, const uint64_t *lens, const uint32_t *counts,
                         uint32_t lo, uint32_t hi, uint32_t ratio, uint32_t *out) {
    if (!k) return 0;
    if (dg_decode(bufs[0], lens[0], counts[0], lo, hi, out) != 0) return -1;
    int64_t n = counts[0];
    for (size_t i = 1; i < k && n > 0; i++) {
        if (ratio && (uint64_t)n * ratio < counts[i]) break;
        n = dg_and_encoded(out, (size_t)n, bufs[i], lens[i], counts[i], lo, hi, out);
        if (n < 0) return -1;
    }
    return n;
}

/* The documents in both sorted lists (galloping through the longer one when the other is much shorter). */
EXPORT size_t dg_and(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint32_t *out) {
    if (na > nb) {
        const uint32_t *t = a;
        a = b;
        b = t;
        size_t tn = na;
        na = nb;
        nb = tn;
    }
    size_t n = 0, j = 0;
    if (na * 16 < nb) {
        for (size_t i = 0; i < na && j < nb; i++) {
            uint32_t x = a[i];
            size_t step = 1, hi = j;
            while (hi < nb && b[hi] < x) {
                j = hi + 1;
                hi += step;
                step *= 2;
            }
            if (hi > nb) hi = nb;
            while (j < hi) { /* binary search in b[j..hi) for the first >= x */
                size_t mid = j + (hi - j) / 2;
                if (b[mid] < x) j = mid + 1;
                else hi = mid;
            }
            if (j < nb && b[j] == x) out[n++] = x;
        }
        return n;
    }
    size_t i = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) i++;
        else if (a[i] > b[j]) j++;
        else {
            out[n++] = a[i];
            i++;
            j++;
        }
    }
    return n;
}

/* The documents in either sorted list. */
EXPORT size_t dg_or(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint32_t *out) {
    size_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) out[n++] = a[i++];
        else if (a[i] > b[j]) out[n++] = b[j++];
        else {
            out[n++] = a[i++];
            j++;
        }
    }
    while (i < na) out[n++] = a[i++];
    while (j < nb) out[n++] = b[j++];
    return n;
}

/* Where each of the sorted documents `docs` stands in the sorted table `table`: out[i] = its index, or
   -1 when it is not there. */
EXPORT void dg_positions(const uint32_t *docs, size_t n, const uint32_t *table, size_t nt, int64_t *out) {
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        while (j < nt && table[j] < docs[i]) j++;
        out[i] = (j < nt && table[j] == docs[i]) ? (int64_t)j : -1;
    }
}

/* ---- merging segments ------------------------------------------------------------------------------ */

static int is_dead(const uint32_t *dead, size_t n, uint32_t doc) {
    size_t a = 0, b = n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (dead[mid] < doc) a = mid + 1;
        else b = mid;
    }
    return a < n && dead[a] == doc;
}

/* Merge the postings of k segments, oldest first (every document of one is below every document of
   the next), for the trigrams of one range: input i has ngrams[i] trigrams (grams[i], counts[i],
   lens[i] in trigram order) whose lists are buf[i][0..buflen[i]), documents in [lo[i], hi[i]]. A
   document in `dead` (sorted) is left out, and so is a trigram left with none. Writes the lists to
   out (at most the inputs' total size) and the directory to ogram/ocount/olen; returns the bytes
   written and sets *onum, or -1 when an input is not as a writer writes it. */
EXPORT int64_t dg_merge(int k, const uint8_t *const *buf, const uint64_t *buflen, const uint32_t *const *grams,
                        const uint32_t *const *counts, const uint64_t *const *lens, const uint64_t *ngrams,
                        const uint32_t *lo, const uint32_t *hi, const uint32_t *dead, size_t ndead, uint8_t *out,
                        uint64_t outcap, uint32_t *ogram, uint32_t *ocount, uint64_t *olen, uint64_t *onum) {
    size_t at[64], pos[64];
    if (k < 1 || k > 64) return -1;
    for (int i = 0; i < k; i++) {
        at[i] = 0;
        pos[i] = 0;
        uint64_t total = 0;
        for (uint64_t g = 0; g < ngrams[i]; g++) {
            if (lens[i][g] > buflen[i] - total) return -1;
            total += lens[i][g];
            if (g && grams[i][g] <= grams[i][g - 1]) return -1;
        }
        if (total != buflen[i]) return -1;
    }
    int clean[64]; /* no dead document in the input's range: its lists are copied, not re-encoded */
    for (int i = 0; i < k; i++) {
        size_t a = 0, b = ndead;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (dead[mid] < lo[i]) a = mid + 1;
            else b = mid;
        }
        clean[i] = !(a < ndead && dead[a] <= hi[i]);
    }
    uint64_t written = 0, num = 0;
    for (;;) {
        uint32_t g = UINT32_MAX;
        int any = 0;
        for (int i = 0; i < k; i++)
            if (at[i] < ngrams[i] && (!any || grams[i][at[i]] < g)) {
                g = grams[i][at[i]];
                any = 1;
            }
        if (!any) break;
        uint64_t start = written;
        uint32_t prev = 0, seen = 0, count = 0;
        for (int i = 0; i < k; i++) {
            if (at[i] >= ngrams[i] || grams[i][at[i]] != g) continue;
            const uint8_t *p = buf[i] + pos[i];
            size_t len = lens[i][at[i]], q = 0, first_end = 0;
            uint32_t doc = 0, first = 0, n = counts[i][at[i]];
            for (uint32_t c = 0; c < n; c++) {
                uint32_t delta;
                if (!get_varint(p, len, &q, &delta) || delta == 0 || delta > UINT32_MAX - doc) return -1;
                doc += delta;
                if (doc < lo[i] || doc > hi[i] || doc <= seen) return -1;
                seen = doc;
                if (clean[i]) {
                    if (c == 0) {
                        first = doc;
                        first_end = q;
                    }
                    continue;
                }
                if (is_dead(dead, ndead, doc)) continue;
                if (written + 5 > outcap) return -1;
                written += put_varint(out + written, doc - prev);
                prev = doc;
                count++;
            }
            if (q != len) return -1;
            if (clean[i] && n) { /* the list as it is, but for its first document's delta */
                if (written + 5 + (len - first_end) > outcap) return -1;
                written += put_varint(out + written, first - prev);
                memcpy(out + written, p + first_end, len - first_end);
                written += len - first_end;
                prev = doc;
                count += n;
            }
            pos[i] += len;
            at[i]++;
        }
        if (count) {
            ogram[num] = g;
            ocount[num] = count;
            olen[num] = written - start;
            num++;
        }
    }
    *onum = num;
    return (int64_t)written;
}

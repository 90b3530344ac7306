/* The engine's native part (engine/native.py loads it through ctypes): many files stat-ed in one call.

   glob needs every listed file's modification time and the index's rule check needs every rule file's
   signature for each grep answer; a stat through Python costs ~1.5 us of the interpreter per file on
   top of the system call, so a listing of thousands of files spent more time stat-ing than ripgrep spent
   listing them. This does the same `fstatat` calls in a loop, without the GIL.

   And glob's listing of a small tree (index/glance.py): the walk that lists every regular file under a
   directory, as ripgrep's `--files` does, in one call instead of a Python step per entry.

   Rules: C99, POSIX and the C library only; no Python API, no global state; it only reads metadata and
   directories (no file is opened, nothing is written). Built by scripts/build-native with the index's library
   (`cc`, or `x86_64-w64-mingw32-gcc` for Windows, where it says "not here" and native.py stats in
   Python); the ABI number below changes with any change of a signature. */

#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1 /* d_type */
#define _DARWIN_C_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

#define ABI 2
#define FIELDS 6 /* per name: dev, ino, type, size, mtime_ns, ctime_ns */
#define FOLLOW 1 /* flag: follow a symbolic link (stat), else look at the link itself (lstat) */

EXPORT int32_t dn_abi(void) { return ABI; }

/* Stat each name of names[0..len): names each followed by a NUL, relative to the directory `dirfd` (or
   absolute; a negative dirfd: the current directory). For each, FIELDS numbers in out: st_dev, st_ino,
   the file type (st_mode & S_IFMT), st_size, st_mtime and st_ctime in nanoseconds — a directory's
   size, mtime and ctime as -1, 0, 0 (a directory is known by its identity alone) — or, when it cannot
   be stat-ed, -errno, 0, 0, 0, 0, 0 (a type of 0 is no file). Returns the number of names, -1 when
   `out` (cap numbers) is too small or a name is not NUL-terminated, -2 where this is not implemented. */
EXPORT int64_t dn_stat_many(int dirfd, const char *names, size_t len, int flags, int64_t *out, size_t cap) {
#if defined(_WIN32)
    (void)dirfd;
    (void)names;
    (void)len;
    (void)flags;
    (void)out;
    (void)cap;
    return -2;
#else
    size_t at = 0, n = 0;
    int fd = dirfd < 0 ? AT_FDCWD : dirfd;
    int how = (flags & FOLLOW) ? 0 : AT_SYMLINK_NOFOLLOW;
    while (at < len) {
        const char *name = names + at;
        size_t end = at;
        while (end < len && names[end]) end++;
        if (end == len) return -1; /* the last name has no NUL after it */
        if ((n + 1) * FIELDS > cap) return -1;
        int64_t *o = out + n * FIELDS;
        struct stat st;
        if (fstatat(fd, name, &st, how) != 0) {
            o[0] = -(int64_t)errno;
            o[1] = o[2] = o[3] = o[4] = o[5] = 0;
        } else {
            o[0] = (int64_t)st.st_dev;
            o[1] = (int64_t)st.st_ino;
            o[2] = (int64_t)(st.st_mode & S_IFMT);
            if (S_ISDIR(st.st_mode)) {
                o[3] = -1;
                o[4] = o[5] = 0;
            } else {
                o[3] = (int64_t)st.st_size;
#if defined(__APPLE__)
                o[4] = (int64_t)st.st_mtimespec.tv_sec * 1000000000 + st.st_mtimespec.tv_nsec;
                o[5] = (int64_t)st.st_ctimespec.tv_sec * 1000000000 + st.st_ctimespec.tv_nsec;
#else
                o[4] = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
                o[5] = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
#endif
            }
        }
        n++;
        at = end + 1;
    }
    return (int64_t)n;
#endif
}

#if !defined(_WIN32)
/* A growable byte buffer. */
typedef struct {
    char *data;
    size_t len, cap;
} bytes_t;

static int put(bytes_t *b, const char *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) return 0;
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 1;
}

static int skipped(const char *name, const char *skip, size_t skiplen) {
    for (size_t at = 0; at < skiplen;) {
        size_t n = strlen(skip + at);
        if (!strcmp(name, skip + at)) return 1;
        at += n + 1;
    }
    return 0;
}
#endif

/* The regular files under the directory `top` (a path, NUL-terminated: absolute, or relative to the
   current directory), each written to out as `prefix` + its path below `top` + a NUL: directories are
   descended into, regular files listed, every other entry (a symbolic link, a FIFO, a socket, a device) left
   out — each judged by the type the directory gives, or by lstat when it gives none — and so is any entry
   whose name is one of `skip` (names each followed by a NUL). Returns the number of files, and their bytes
   in *used; -1 when a directory cannot be listed or an entry looked at (errno tells), -2 once more than
   `budget` entries have been read, -3 when out (cap bytes) is too small (*used: what it needed so far),
   -4 where this is not implemented, -5 when memory ran out. */
EXPORT int64_t dn_walk(const char *top, const char *prefix, size_t prefixlen, const char *skip, size_t skiplen,
                       size_t budget, char *out, size_t cap, size_t *used) {
#if defined(_WIN32)
    (void)top; (void)prefix; (void)prefixlen; (void)skip; (void)skiplen; (void)budget; (void)out; (void)cap;
    *used = 0;
    return -4;
#else
    bytes_t todo = {0, 0, 0}; /* directories to list: paths below top, each followed by a NUL */
    bytes_t path = {0, 0, 0};
    size_t toplen = strlen(top), entries = 0, written = 0;
    int64_t files = 0, result = 0;
    if (!put(&todo, "", 1)) return -5;
    while (todo.len) {
        /* pop the last directory */
        size_t end = todo.len - 1, start = end;
        while (start > 0 && todo.data[start - 1]) start--;
        size_t rel = end - start;
        path.len = 0;
        if (!put(&path, top, toplen) || (rel && (!put(&path, "/", 1) || !put(&path, todo.data + start, rel))) ||
            !put(&path, "", 1)) {
            result = -5;
            break;
        }
        char *dirrel = malloc(rel + 1);
        if (!dirrel) {
            result = -5;
            break;
        }
        memcpy(dirrel, todo.data + start, rel + 1);
        todo.len = start;
        DIR *dir = opendir(path.data);
        if (!dir) {
            free(dirrel);
            result = -1;
            break;
        }
        for (;;) {
            errno = 0;
            struct dirent *d = readdir(dir);
            if (!d) {
                if (errno) result = -1;
                break;
            }
            const char *name = d->d_name;
            if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]))) continue;
            if (++entries > budget) {
                result = -2;
                break;
            }
            if (skipped(name, skip, skiplen)) continue;
            int kind = d->d_type == DT_DIR ? 1 : d->d_type == DT_REG ? 2 : d->d_type == DT_UNKNOWN ? 0 : 3;
            if (kind == 0) {
                struct stat st;
                if (fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    if (errno == ENOENT) continue; /* gone while listed */
                    result = -1;
                    break;
                }
                kind = S_ISDIR(st.st_mode) ? 1 : S_ISREG(st.st_mode) ? 2 : 3;
            }
            size_t n = strlen(name);
            if (kind == 1) {
                if ((rel && (!put(&todo, dirrel, rel) || !put(&todo, "/", 1))) || !put(&todo, name, n + 1)) {
                    result = -5;
                    break;
                }
            } else if (kind == 2) {
                size_t need = prefixlen + (rel ? rel + 1 : 0) + n + 1;
                if (written + need <= cap) {
                    char *o = out + written;
                    memcpy(o, prefix, prefixlen);
                    o += prefixlen;
                    if (rel) {
                        memcpy(o, dirrel, rel);
                        o += rel;
                        *o++ = '/';
                    }
                    memcpy(o, name, n + 1);
                }
                written += need;
                files++;
            }
        }
        closedir(dir);
        free(dirrel);
        if (result) break;
    }
    free(todo.data);
    free(path.data);
    *used = written;
    if (result) return result;
    return written > cap ? -3 : files;
#endif
}

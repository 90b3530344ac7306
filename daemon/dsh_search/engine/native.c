/* The engine's native part (engine/native.py loads it through ctypes): many files stat-ed in one call.

   glob needs every listed file's modification time and the index's rule check needs every rule file's
   signature before each grep answer; a stat through Python costs ~1.5 us of the interpreter per file on
   top of the system call, so a listing of thousands of files spent more time stat-ing than ripgrep spent
   listing them. This does the same `fstatat` calls in a loop, without the GIL.

   Rules: C99, POSIX and the C library only; no Python API, no global state; it only reads metadata
   (no file is opened, nothing is written). Built by scripts/build-native with the index's library
   (`cc`, or `x86_64-w64-mingw32-gcc` for Windows, where it says "not here" and native.py stats in
   Python); the ABI number below changes with any change of a signature. */

#if !defined(_WIN32)
#define _POSIX_C_SOURCE 200809L
#define _DARWIN_C_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#endif
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

#define ABI 1
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

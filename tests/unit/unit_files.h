/* Shared by the unit tests that write files: a fresh temporary
 * directory, its sorted listing, and removing it with all it holds.
 * Include after <cmocka.h>. */
#ifndef MTK_TESTS_UNIT_FILES_H
#define MTK_TESTS_UNIT_FILES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A new directory /tmp/mtk-test-<tag>-XXXXXX, its path written to `buf`
 * (at least 64 bytes) and returned; fails the test when it cannot be made. */
static inline char *unit_temp_dir(char *buf, const char *tag)
{
    snprintf(buf, 64, "/tmp/mtk-test-%s-XXXXXX", tag);
    assert_non_null(mkdtemp(buf));
    return buf;
}

/* The entries of `dir` other than . and .. (hidden ones too), sorted,
 * joined by spaces; at most 64 of them. The result lives in a static
 * buffer until the next call. */
static inline const char *unit_listing(const char *dir)
{
    static char out[2048];
    char *names[64];
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) && n < 64;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (strcmp(names[k], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[k];
                names[k] = t;
            }
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i) strcat(out, " ");
        strcat(out, names[i]);
        free(names[i]);
    }
    return out;
}

/* Removes `dir` and everything below it (links are removed, not followed). */
static inline void unit_remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[1024];
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_true(n > 0 && n < (int)sizeof path);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) unit_remove_tree(path);
        else unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

#endif

/*
 * main() for a harness built without libFuzzer (the meson test suite):
 * runs LLVMFuzzerTestOneInput once on every file named on the command
 * line, and on every file of every directory named (its corpus and its
 * crashes, so a bug the fuzzer once found stays fixed). A missing
 * path is skipped: git keeps no empty crashes directory. Exits 0 when
 * every input ran; a failed check aborts the process (fuzz.h), which
 * fails the test; an unreadable file, or no input at all, fails it too.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Runs the harness on one file's bytes. Returns -1 when it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: read error\n", path);
        free(buf);
        return -1;
    }
    /* An exact-size copy: the sanitizers see a read past the input's end. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Every regular file of dir, in name order. Returns how many failed to
 * run; *ran counts those that did. */
static int run_dir(const char *dir, int *ran)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name);
    if (n < 0)
        return errno == ENOENT ? 0 : (fprintf(stderr, "%s: %s\n", dir, strerror(errno)), 1);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) == 0)
                (*ran)++;
            else
                failed++;
        }
        free(names[i]);
    }
    free(names);
    return failed;
}

int main(int argc, char **argv)
{
    int failed = 0, ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            if (errno == ENOENT)
                continue; /* a crashes directory git did not keep */
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            failed++;
        } else if (S_ISDIR(st.st_mode))
            failed += run_dir(argv[i], &ran);
        else if (run_file(argv[i]) == 0)
            ran++;
        else
            failed++;
    }
    printf("%d inputs replayed, %d unreadable\n", ran, failed);
    /* No input at all: a corpus went missing, and the test would pass
     * having tested nothing. */
    return failed || !ran ? 1 : 0;
}

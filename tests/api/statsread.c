/*
 * api-statsread FILE: reads a live spillway stats file with nothing but the
 * public header spillway/stats.h (no spillway source, no spillway library),
 * as a tool outside the tree would. Prints "key=value" lines: the header's
 * pid, command and version, then every field (gauges also as NAME_peak),
 * generated from the same field list the library writes with.
 * Exit 0; 1 when the file is not a stats file of this format (the check's
 * answer is printed), 2 when it cannot be opened or mapped.
 */
#include <spillway/stats.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: api-statsread FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 2;
    }
    /* Map what is there, however big: the check judges the size. */
    void *map = st.st_size ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0)
                           : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED) {
        fprintf(stderr, "%s: cannot map\n", argv[1]);
        return 2;
    }
    int c = spillway_stats_check(map, (uint64_t)st.st_size);
    if (c != 0) {
        printf("check=%d\n", c);
        return 1;
    }
    spillway_stats_file_t s;
    if (spillway_stats_snapshot(map, &s, 1000) != 0)
        printf("torn=1\n");
    printf("pid=%d\ncomm=%.*s\nversion=%" PRIu32 "\n", (int)s.h.pid, SPILLWAY_STATS_COMM_LEN,
           s.h.comm, s.h.version);
#define PRINT_COUNTER(name) printf(#name "=%" PRIu64 "\n", (uint64_t)s.name);
#define PRINT_GAUGE(name) \
    printf(#name "=%" PRIu64 "\n" #name "_peak=%" PRIu64 "\n", (uint64_t)s.name, (uint64_t)s.name##_peak);
#define PRINT(kind, name, unit, help) PRINT_##kind(name)
    SW_STATS_FIELDS(PRINT)
    munmap(map, (size_t)st.st_size);
    return 0;
}

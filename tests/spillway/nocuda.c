/*
 * swt-nocuda: a program that never touches CUDA. Under LD_PRELOAD of
 * libspillway it shows what spillway costs a process that does not use
 * the GPU (init.c: nothing before the first CUDA call): after a short
 * sleep, in which a thread started at load time would have shown up, it
 * prints how many threads the process has and whether a libcuda is
 * mapped, as "nocuda: threads=N driver=0|1".
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int driver_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "libcuda.so"))
            found = 1;
    fclose(f);
    return found;
}

int main(void)
{
    struct timespec nap = {0, 200 * 1000 * 1000};
    nanosleep(&nap, NULL);
    printf("nocuda: threads=%d driver=%d\n", count_threads(), driver_mapped());
    return 0;
}

/*
 * rtlocal: loads two plugins with dlopen(RTLD_LOCAL), each linked with its
 * own runtime (rtplugin.c), as two Python extensions may, and runs each.
 * The program itself is linked with no runtime, so neither runtime is in
 * the global scope. Each run must be served by the plugin's own runtime
 * and not touch the other (fakert_calls_<tag>, found through each
 * plugin's handle). Prints "rtlocal: ok" and exits 0 when all is well; 1
 * otherwise.
 * Usage: rtlocal PLUGIN_A PLUGIN_B
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef int (*run_fn)(uint32_t);
typedef unsigned long (*calls_fn)(void);

typedef struct {
    const char *tag;
    run_fn run;
    calls_fn calls; /* its runtime's count of calls served */
} plugin_t;

static int load(plugin_t *p, const char *path, const char *tag)
{
    char run[64], calls[64];
    snprintf(run, sizeof run, "plugin_run_%s", tag);
    snprintf(calls, sizeof calls, "fakert_calls_%s", tag);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    p->tag = tag;
    p->run = h ? (run_fn)dlsym(h, run) : NULL;
    p->calls = h ? (calls_fn)dlsym(h, calls) : NULL;
    if (!p->run || !p->calls) {
        fprintf(stderr, "rtlocal: cannot load %s: %s\n", path, dlerror());
        return 1;
    }
    return 0;
}

/* Runs one plugin; its runtime must serve calls and the other's none. */
static int run(const plugin_t *p, const plugin_t *other, uint32_t value)
{
    unsigned long own = p->calls(), others = other->calls();
    int r = p->run(value);
    if (r != 0) {
        fprintf(stderr, "rtlocal: plugin %s returned %d\n", p->tag, r);
        return 1;
    }
    if (p->calls() == own || other->calls() != others) {
        fprintf(stderr, "rtlocal: plugin %s: its runtime served %lu calls, the other %lu\n",
                p->tag, p->calls() - own, other->calls() - others);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rtlocal PLUGIN_A PLUGIN_B\n");
        return 2;
    }
    plugin_t a, b;
    if (load(&a, argv[1], "a") || load(&b, argv[2], "b"))
        return 1;
    int bad = run(&a, &b, 0xa1) | run(&b, &a, 0xb2) | run(&a, &b, 0xa3);
    if (!bad)
        printf("rtlocal: ok\n");
    return bad;
}

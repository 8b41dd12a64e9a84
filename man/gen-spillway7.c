/*
 * Writes spillway(7)'s scdoc source: man/spillway.7.scd.in with its
 * @VARIABLES@ line replaced by the library's options table and @FIELDS@ by
 * the stats field list, so the manual lists what the code has, always.
 *
 *   gen-spillway7 TEMPLATE > spillway.7.scd
 *
 * Exit status 1, saying why, when the template cannot be read or lacks a
 * placeholder (a page without its lists must not be installed).
 */
#include "spillway/stats_fields.h"
#include "sw.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *kind, *help;
} fields[] = {
#define FIELD(kind, name, unit, help) {#name, #kind, help},
    SW_STATS_FIELDS(FIELD)
#undef FIELD
};

/* Text that scdoc must show as it is: its markup characters escaped. */
static void text(const char *s)
{
    for (; *s; s++) {
        if (*s == '*' || *s == '_' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
}

static void variables(void)
{
    sw_option_info_t o;
    for (size_t i = 0; sw_option_info(i, &o); i++) {
        printf("*SPILLWAY\\_");
        text(o.name);
        printf("*\n\t");
        text(o.help);
        printf(".\n\n\tAccepts ");
        text(o.forms);
        printf(". Default: ");
        text(o.dflt[0] ? o.dflt : "none");
        printf(".\n\n");
    }
}

static void stat_fields(void)
{
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        printf("*");
        text(fields[i].name);
        printf("* (%s)\n\t", strcmp(fields[i].kind, "GAUGE") == 0 ? "gauge" : "counter");
        text(fields[i].help);
        printf(".\n\n");
    }
}

int main(int argc, char **argv)
{
    FILE *f = argc == 2 ? fopen(argv[1], "r") : NULL;
    if (!f) {
        fprintf(stderr, "gen-spillway7: cannot read template %s\n", argc == 2 ? argv[1] : "(none given)");
        return 1;
    }
    bool vars_done = false, fields_done = false;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strcmp(line, "@VARIABLES@\n") == 0) {
            variables();
            vars_done = true;
        } else if (strcmp(line, "@FIELDS@\n") == 0) {
            stat_fields();
            fields_done = true;
        } else {
            fputs(line, stdout);
        }
    }
    fclose(f);
    if (!vars_done || !fields_done) {
        fprintf(stderr, "gen-spillway7: %s lacks @VARIABLES@ or @FIELDS@\n", argv[1]);
        return 1;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

/*
 * Messages: "spillway[pid]: warning: text\n", filtered by SPILLWAY_LOG and
 * written to stderr or SPILLWAY_LOG_FILE.
 *
 * Each line is formatted into a stack buffer and written with one write(2),
 * so lines from different threads (and, with O_APPEND, different processes
 * sharing the file) never interleave mid-line, and no lock is needed: a
 * thread that logs from inside a hook can never deadlock on the logger.
 * sw_log can be called before sw_log_init; it then writes warnings and
 * errors to stderr. It never changes errno, because the application may be
 * about to read the errno of the call spillway wrapped.
 *
 * The log file is opened with O_NOFOLLOW: a symbolic link planted at its
 * name (in a shared directory, say) is refused, not followed to a file
 * the link's owner chose. In a setuid or setgid program (AT_SECURE) the
 * option is ignored altogether: its user must not make it append to files
 * only its owner may write.
 */
#include "sw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* Longer lines are cut and end in "..." */
#define LINE_MAX_BYTES 1024

static atomic_int log_level = SW_LOG_WARN;
static atomic_int log_fd = STDERR_FILENO;
/* The file is opened by the first sw_log_init that names one, never again:
 * a second init (after fork, say) must not leak or swap descriptors under
 * threads that are writing. */
static atomic_bool log_file_tried;

static const char *const level_tag[] = {
    [SW_LOG_ERROR] = "error: ",
    [SW_LOG_WARN] = "warning: ",
    [SW_LOG_INFO] = "",
    [SW_LOG_DEBUG] = "debug: ",
};

static void write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere left to report it */
        buf += n;
        len -= (size_t)n;
    }
}

static void vlog(int fd, int level, const char *fmt, va_list ap)
{
    char line[LINE_MAX_BYTES];
    int n = snprintf(line, sizeof line, "spillway[%d]: %s", (int)getpid(),
                     level >= SW_LOG_ERROR && level <= SW_LOG_DEBUG ? level_tag[level] : "");
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2) {
        len = sizeof line - 2;
        memcpy(line + len - 3, "...", 3);
    }
    line[len++] = '\n';
    write_all(fd, line, len);
}

void sw_log(int level, const char *fmt, ...)
{
    if (level > atomic_load_explicit(&log_level, memory_order_relaxed))
        return;
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    vlog(atomic_load_explicit(&log_fd, memory_order_relaxed), level, fmt, ap);
    va_end(ap);
    errno = saved;
}

static void say_stderr(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_stderr(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(STDERR_FILENO, level, fmt, ap);
    va_end(ap);
}

bool sw_secure(void)
{
    return getauxval(AT_SECURE) != 0;
}

/* On a log file that cannot be opened, warns on stderr and keeps logging
 * there: losing the messages is better than refusing to run. */
void sw_log_init(const sw_options_t *o)
{
    int saved = errno;
    atomic_store(&log_level, o->log_level);
    if (o->log_file[0] && !atomic_exchange(&log_file_tried, true)) {
        int fd = -1;
        if (sw_secure())
            say_stderr(SW_LOG_WARN, "SPILLWAY_LOG_FILE ignored in a setuid or setgid program; "
                       "logging to stderr");
        else if ((fd = open(o->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
                                             O_NOFOLLOW, 0644)) < 0)
            say_stderr(SW_LOG_WARN, "cannot open SPILLWAY_LOG_FILE \"%s\": %s; logging to stderr",
                       o->log_file,
                       errno == ELOOP ? "it is a symbolic link; refusing to follow it"
                                      : strerror(errno));
        if (fd >= 0)
            atomic_store(&log_fd, fd);
    }
    errno = saved;
}

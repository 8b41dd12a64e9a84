"""python -m spillway ARGS: the launcher itself, `spillway ARGS`, in place of
this interpreter (exec), so its options, messages, signals and exit status
are exactly the launcher's."""
import os
import sys

from ._bin import binary


def main():
    path = binary("spillway")
    try:
        os.execv(path, ["spillway", *sys.argv[1:]])
    except OSError as e:
        # The launcher's own statuses for a command it cannot run.
        print(f"spillway: cannot run {path}: {e.strerror}", file=sys.stderr)
        sys.exit(127 if isinstance(e, FileNotFoundError) else 126)


if __name__ == "__main__":
    main()

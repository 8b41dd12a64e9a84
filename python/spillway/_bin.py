"""Where pip put the launcher: the scripts directory of the scheme this
package was installed with (a venv's bin, ~/.local/bin, /usr/local/bin).
The package's own file list (RECORD) says exactly where, whatever the
scheme; PATH is only the last resort."""
import importlib.metadata
import os
import shutil
import sys
import sysconfig


def binary(name):
    """The path of the installed program `name` (spillway, spillway-stat);
    exits with status 1, as the launcher does when its library is missing,
    when there is none."""
    candidates = []
    try:
        for f in importlib.metadata.files("spillway") or ():
            if f.name == name and f.parent.name == "bin":
                candidates.append(str(f.locate()))
    except importlib.metadata.PackageNotFoundError:
        pass  # not installed by pip: a source tree on PYTHONPATH, say
    candidates.append(os.path.join(sysconfig.get_path("scripts"), name))
    candidates.append(shutil.which(name) or "")
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return os.path.realpath(path)
    print(f"spillway: the installed {name} was not found (is the spillway wheel installed?)",
          file=sys.stderr)
    sys.exit(1)

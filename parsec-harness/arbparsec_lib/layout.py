"""Where arbparsec finds the programs it runs: a CMake build tree, or an installation.

A build tree keeps everything in BUILD/bin (arbrun, core-arbiter, arbloadgen, arbparsec-spawn,
parsec-workloads/). An installation (`cmake --install`, the Debian package) puts arbrun and
core-arbiter in bin/ and the helpers and workloads in arbrun's private library directory; the
install writes install_layout.py beside this file with those directories relative to it, so an
installed arbparsec needs no option and no environment variable. Without --build-dir, an installed
arbparsec uses its installation, and one run from the source tree uses the tree's build/."""
import os
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

try:
    from . import install_layout  # written by `cmake --install`; absent in the source tree
except ImportError:
    install_layout = None


@dataclass(frozen=True)
class Layout:
    bin_dir: str       # arbrun, core-arbiter
    helper_dir: str    # arbloadgen, arbparsec-spawn
    workload_dir: str  # the builtin workloads
    fix: str           # how to get a missing program, for error messages

    def program(self, name):
        return os.path.join(self.bin_dir, name)

    def helper(self, name):
        return os.path.join(self.helper_dir, name)

    def workload(self, name):
        return os.path.join(self.workload_dir, name)


def from_build_dir(build_dir):
    """The layout of a CMake build tree."""
    b = os.path.join(build_dir, "bin")
    return Layout(b, b, os.path.join(b, "parsec-workloads"),
                  f"build it with 'ninja -C {build_dir}' (or scripts/build.sh release)")


def installed(layout_module):
    """The layout of the installation that wrote `layout_module` beside this file."""
    helpers = os.path.normpath(os.path.join(HERE, layout_module.HELPER_DIR))
    return Layout(os.path.normpath(os.path.join(HERE, layout_module.BIN_DIR)), helpers,
                  os.path.join(helpers, "parsec-workloads"),
                  "reinstall arbrun (the Debian package, or cmake --install)")


def resolve(build_dir):
    """--build-dir when given; else the installation this arbparsec belongs to, or the source
    tree's build/."""
    if build_dir:
        return from_build_dir(build_dir)
    if install_layout is not None:
        return installed(install_layout)
    return from_build_dir(os.path.join(REPO, "build"))

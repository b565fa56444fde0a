"""Fake PARSEC 3.0 installations for the tests.

RUNCONFS are PARSEC 3.0's run configurations (pkgs/GROUP/APP/parsec/SIZE.runconf) as this
project understands them, written from PARSEC 3.0's layout and cross-checked against published
run scripts; they could not be checked against a real installation (none is available to the
project). write_runconf() writes them in PARSEC's own file format.

make_dressed_home() builds a tiny PARSEC tree whose "apps" are shell scripts and the builtin
workloads, so that CI runs `arbparsec colocate --batch parsec:APP` end to end without PARSEC:
  swaptions     the builtin montecarlo workload (stdout check: deterministic)
  blackscholes  a script reading in_4.txt from its input archive, writing prices.txt
  raytrace      a script whose output names a process id, like rtview's pointer (varies natively)
Usage as a program: python3 -m tests.parsec_fixture DIR BUILD_DIR (prints DIR).
"""
import io
import os
import stat
import sys
import tarfile

SIZES = ("test", "simdev", "simsmall", "simmedium", "simlarge", "native")

_X264 = ("--quiet --qp 20 --partitions b8x8,i4x4 --ref 5 --direct auto --b-pyramid --weightb "
         "--mixed-refs --no-fast-pskip --me umh --subme 7 --analyse b8x8,i4x4 --threads ${NTHREADS} "
         "-o eledream.264 ")


def _each(*args):
    return dict(zip(SIZES, args))


# (group, run_exec, {size: run_args}, exported variables)
RUNCONFS = {
    "blackscholes": ("apps", "bin/blackscholes", _each(
        "${NTHREADS} in_4.txt prices.txt", "${NTHREADS} in_16.txt prices.txt",
        "${NTHREADS} in_4K.txt prices.txt", "${NTHREADS} in_16K.txt prices.txt",
        "${NTHREADS} in_64K.txt prices.txt", "${NTHREADS} in_10M.txt prices.txt"), {}),
    "bodytrack": ("apps", "bin/bodytrack", _each(
        "sequenceB_1 4 1 5 1 0 ${NTHREADS}", "sequenceB_1 4 1 100 3 0 ${NTHREADS}",
        "sequenceB_1 4 1 1000 5 0 ${NTHREADS}", "sequenceB_2 4 2 2000 5 0 ${NTHREADS}",
        "sequenceB_4 4 4 4000 5 0 ${NTHREADS}", "sequenceB_261 4 261 4000 5 0 ${NTHREADS}"), {}),
    "canneal": ("kernels", "bin/canneal", _each(
        "${NTHREADS} 5 100 10.nets 1", "${NTHREADS} 100 300 100.nets 2",
        "${NTHREADS} 10000 2000 100000.nets 32", "${NTHREADS} 15000 2000 200000.nets 64",
        "${NTHREADS} 15000 2000 400000.nets 128", "${NTHREADS} 15000 2000 2500000.nets 6000"), {}),
    "dedup": ("kernels", "bin/dedup", _each(*(
        f"-c -p -v -t ${{NTHREADS}} -i {f} -o output.dat.ddp" for f in (
            "test.dat", "hamlet.dat", "media.dat", "media.dat", "media.dat",
            "FC-6-x86_64-disc1.iso"))), {}),
    "facesim": ("apps", "bin/facesim", _each(
        "-h", "-h", "-timing -threads ${NTHREADS}", "-timing -threads ${NTHREADS}",
        "-timing -threads ${NTHREADS}", "-timing -threads ${NTHREADS} -lastframe 100"), {}),
    "ferret": ("apps", "bin/ferret", _each(
        "corel lsh queries 5 5 ${NTHREADS} output.txt", "corel lsh queries 5 5 ${NTHREADS} output.txt",
        "corel lsh queries 10 20 ${NTHREADS} output.txt", "corel lsh queries 10 20 ${NTHREADS} output.txt",
        "corel lsh queries 10 20 ${NTHREADS} output.txt", "corel lsh queries 50 20 ${NTHREADS} output.txt"),
        {}),
    "fluidanimate": ("apps", "bin/fluidanimate", _each(
        "${NTHREADS} 1 in_5K.fluid out.fluid", "${NTHREADS} 3 in_15K.fluid out.fluid",
        "${NTHREADS} 5 in_35K.fluid out.fluid", "${NTHREADS} 5 in_100K.fluid out.fluid",
        "${NTHREADS} 5 in_300K.fluid out.fluid", "${NTHREADS} 500 in_500K.fluid out.fluid"), {}),
    "freqmine": ("apps", "bin/freqmine", _each(
        "T10I4D100K_3.dat 1", "T10I4D100K_1k.dat 3", "kosarak_250k.dat 220",
        "kosarak_500k.dat 410", "kosarak_990k.dat 790", "webdocs_250k.dat 11000"),
        {"OMP_NUM_THREADS": "${NTHREADS}"}),
    "raytrace": ("apps", "bin/rtview", _each(
        "octahedron.obj -automove -nthreads ${NTHREADS} -frames 1 -res 1 1",
        "bunny.obj -automove -nthreads ${NTHREADS} -frames 1 -res 16 16",
        "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 480 270",
        "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 960 540",
        "happy_buddha.obj -automove -nthreads ${NTHREADS} -frames 3 -res 1920 1080",
        "thai_statue.obj -automove -nthreads ${NTHREADS} -frames 200 -res 1920 1080"), {}),
    "streamcluster": ("kernels", "bin/streamcluster", _each(
        "2 5 1 10 10 5 none output.txt ${NTHREADS}", "3 10 3 16 16 10 none output.txt ${NTHREADS}",
        "10 20 32 4096 4096 1000 none output.txt ${NTHREADS}",
        "10 20 64 8192 8192 1000 none output.txt ${NTHREADS}",
        "10 20 128 16384 16384 1000 none output.txt ${NTHREADS}",
        "10 20 128 1000000 200000 5000 none output.txt ${NTHREADS}"), {}),
    "swaptions": ("apps", "bin/swaptions", _each(
        "-ns 1 -sm 5 -nt ${NTHREADS}", "-ns 3 -sm 50 -nt ${NTHREADS}",
        "-ns 16 -sm 10000 -nt ${NTHREADS}", "-ns 32 -sm 20000 -nt ${NTHREADS}",
        "-ns 64 -sm 40000 -nt ${NTHREADS}", "-ns 128 -sm 1000000 -nt ${NTHREADS}"), {}),
    "vips": ("apps", "bin/vips", _each(*(
        f"im_benchmark {f} output.v" for f in (
            "barbados_256x288.v", "barbados_256x288.v", "pomegranate_1600x1200.v",
            "vulture_2336x2336.v", "bigben_2662x5500.v", "orion_18000x18000.v"))),
        {"IM_CONCURRENCY": "${NTHREADS}"}),
    "x264": ("apps", "bin/x264", _each(*(_X264 + f for f in (
        "eledream_32x18_1.y4m", "eledream_64x36_3.y4m", "eledream_640x360_8.y4m",
        "eledream_640x360_32.y4m", "eledream_640x360_128.y4m", "eledream_1920x1080_512.y4m"))), {}),
}

# Packages without an inputs/input_SIZE.tar for these sizes (they generate their data).
NO_INPUTS = {"streamcluster": SIZES, "swaptions": SIZES, "facesim": ("test", "simdev")}

_HEADER = """#!/bin/bash
#
# {size}.runconf - file containing information necessary to run a specific
#                  program of the PARSEC benchmark suite
#
# Copyright (C) 2008 Princeton University
# Written by Christian Bienia

# This is the information which we need to run the program. Each package of the
# benchmark suite has such a file with information that will be added to the
# global configuration. All variables set in the global configuration files can
# be referenced here.

"""


def runconf_text(size, run_exec, run_args, exports=None):
    """A runconf file in PARSEC 3.0's format."""
    text = _HEADER.format(size=size)
    text += f'# Binary file to execute, relative to installation root\nrun_exec="{run_exec}"\n\n'
    for name, value in (exports or {}).items():
        text += f"# Set number of threads\nexport {name}={value}\n\n"
    text += f'# Arguments to use\nrun_args="{run_args}"\n'
    return text


def pkg_dir(home, app, group=None):
    return os.path.join(home, "pkgs", group or RUNCONFS[app][0], app)


def write_runconf(home, app, size, run_exec=None, run_args=None, exports=None, group=None):
    g, exe, args, exp = RUNCONFS.get(app, (group, None, {}, {}))
    path = os.path.join(pkg_dir(home, app, group or g), "parsec", f"{size}.runconf")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(runconf_text(size, run_exec or exe, run_args if run_args is not None else args[size],
                             exp if exports is None else exports))
    return path


def make_exe(path, text="#!/bin/sh\nexit 0\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def make_tar(path, members):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))


def install(home, app, size, exe_text="#!/bin/sh\nexit 0\n", config="gcc-pthreads",
            inputs=None, runconf=True):
    """A built package APP (run_exec under inst/amd64-linux.CONFIG), its SIZE runconf and (unless
    the package needs none) its input archive. Returns the binary's path."""
    group, run_exec, _, _ = RUNCONFS[app]
    pkg = pkg_dir(home, app)
    exe = os.path.join(pkg, "inst", f"amd64-linux.{config}", run_exec)
    make_exe(exe, exe_text)
    if runconf:
        write_runconf(home, app, size)
    if size not in NO_INPUTS.get(app, ()):
        make_tar(os.path.join(pkg, "inputs", f"input_{size}.tar"), inputs or {"input.dat": b"x\n"})
    return exe


BLACKSCHOLES = """#!/bin/sh
# A stand-in for blackscholes: NTHREADS INPUT OUTPUT; one "price" per input line.
[ $# -eq 3 ] || { echo "Usage: $0 <nthreads> <inputFile> <outputFile>" >&2; exit 1; }
while read -r x; do echo "$((x * 2)).5"; done < "$2" > "$3"
"""

RTVIEW = """#!/bin/sh
# A stand-in for raytrace's rtview: a deterministic line and one naming this process, as rtview
# prints a pointer (its output varies natively).
echo "frames rendered: 1"
echo "scene at 0x$$"
"""


def make_dressed_home(home, build_dir):
    """The fake PARSEC tree of this module's docstring (size test)."""
    os.makedirs(os.path.join(home, "pkgs", "apps"), exist_ok=True)
    os.makedirs(os.path.join(home, "pkgs", "kernels"), exist_ok=True)
    montecarlo = os.path.join(build_dir, "bin", "parsec-workloads", "montecarlo")
    exe = install(home, "swaptions", "test", runconf=False)
    os.unlink(exe)
    os.symlink(montecarlo, exe)
    write_runconf(home, "swaptions", "test", run_args="--threads ${NTHREADS} --size test")
    install(home, "blackscholes", "test", BLACKSCHOLES, inputs={"in_4.txt": b"1\n2\n3\n4\n"})
    install(home, "raytrace", "test", RTVIEW, inputs={"octahedron.obj": b"v 0 0 0\n"})
    return home


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 -m tests.parsec_fixture DIR BUILD_DIR")
    print(make_dressed_home(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))

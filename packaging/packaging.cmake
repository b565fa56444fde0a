# Debian packages from the build tree: `cpack -G DEB` (in build/, or `cpack --config
# build/CPackConfig.cmake -B OUTDIR`) writes
#   arbrun_<version>_<arch>.deb      everything a user runs (component runtime)
#   arbrun-dev_<version>_<arch>.deb  libarbrt and headers for programs using the runtime API (dev)
# Depends of arbrun are computed from its ELF files by dpkg-shlibdeps (Debian: dpkg-dev, file),
# plus what no ELF file names: libunwind (dlopen'ed by the preload library for --class sym: and
# caller: rules) and python3 (arbparsec, arbrun-plot-trace). Installing the package starts
# nothing: debian/postinst says why.
set(ARBRUN_PACKAGE_MAINTAINER "arbrun maintainers <arbrun@invalid>" CACHE STRING
    "Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME arbrun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${ARBRUN_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)  # maintainer scripts 0755, the rest 0644

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME arbrun)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# The libunwind the preload library dlopen()s (found in preload/CMakeLists.txt), as Debian names
# its package: libunwind.so.N is in libunwindN.
set(_unwind_package libunwind8)
if(ARBRUN_LIBUNWIND_PATH)
  file(REAL_PATH ${ARBRUN_LIBUNWIND_PATH} _unwind_real)
  get_filename_component(_unwind_real ${_unwind_real} NAME)
  if(_unwind_real MATCHES "^libunwind\\.so\\.([0-9]+)")
    set(_unwind_package libunwind${CMAKE_MATCH_1})
  endif()
endif()
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "python3, ${_unwind_package}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "python3-matplotlib")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "memcached")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/debian/postinst;${CMAKE_CURRENT_SOURCE_DIR}/debian/prerm;${CMAKE_CURRENT_SOURCE_DIR}/debian/postrm;${CMAKE_CURRENT_SOURCE_DIR}/debian/conffiles")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "runs unmodified pthread programs as user-level threads on arbitrated cores
arbrun -- ./program runs a dynamically linked pthread program with its threads as
user-level threads, on exactly the cores a central core arbiter grants the
process, so a latency-sensitive server and batch jobs share a machine by
priority. No relink and no kernel module: an LD_PRELOAD library does the work.
This package has arbrun, core-arbiter (with a systemd unit, installed but not
enabled), arbctl, the arbparsec benchmark harness and arbrun-plot-trace.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME arbrun-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost-context-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "pkg-config")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "arbrun's user-level thread runtime for new programs (static library, headers)
libarbrt runs user threads on carrier kernel threads, one per core, with a
per-thread glibc TLS, and gives cores back to the core arbiter on request.
Build with: c++ -std=c++20 prog.cc $(pkg-config --cflags --libs arbrt).
Also the core arbiter's client library and protocol headers.")

include(CPack)

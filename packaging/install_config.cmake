# Run by `cmake --install` and by cpack (packaging/CMakeLists.txt, install(CODE)): writes the
# systemd unit and the limits file with the paths of this install's prefix, which is known only
# now (--prefix, or /usr when cpack builds the package). Input variables: ARBRUN_UNIT_TEMPLATE,
# ARBRUN_LIMITS_FILE and the GNUInstallDirs directories ARBRUN_BINDIR, ARBRUN_DOCDIR,
# ARBRUN_SYSCONFDIR as configured. Included, not called: it appends to the install manifest.

# A configured directory made absolute against the prefix used now.
macro(_arbrun_absolute out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}")
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}")
  endif()
endmacro()
_arbrun_absolute(_arbrun_bindir "${ARBRUN_BINDIR}")
_arbrun_absolute(_arbrun_docdir "${ARBRUN_DOCDIR}")
# GNUInstallDirs' rule for the system configuration directory: /etc for prefix /usr, /etc/opt/X
# for /opt/X, PREFIX/etc otherwise.
if(IS_ABSOLUTE "${ARBRUN_SYSCONFDIR}")
  set(_arbrun_etc "${ARBRUN_SYSCONFDIR}")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
  set(_arbrun_etc "/etc")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/opt/(.+)$")
  set(_arbrun_etc "/etc/opt/${CMAKE_MATCH_1}")
else()
  set(_arbrun_etc "${CMAKE_INSTALL_PREFIX}/${ARBRUN_SYSCONFDIR}")
endif()
set(_arbrun_limits "${_arbrun_etc}/arbrun/limits.conf")

# The unit: the checked-in file names /usr/local paths; these become this install's.
file(READ "${ARBRUN_UNIT_TEMPLATE}" _arbrun_unit)
string(REPLACE "/usr/local/bin/" "${_arbrun_bindir}/" _arbrun_unit "${_arbrun_unit}")
string(REPLACE "/usr/local/share/doc/arbrun/" "${_arbrun_docdir}/" _arbrun_unit "${_arbrun_unit}")
string(REPLACE "/usr/local/etc/arbrun/limits.conf" "${_arbrun_limits}" _arbrun_unit
       "${_arbrun_unit}")
set(_arbrun_unit_path "${CMAKE_INSTALL_PREFIX}/lib/systemd/system/core-arbiter.service")
message(STATUS "Installing: $ENV{DESTDIR}${_arbrun_unit_path}")
file(WRITE "$ENV{DESTDIR}${_arbrun_unit_path}" "${_arbrun_unit}")
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "$ENV{DESTDIR}${_arbrun_unit_path}")

# The limits file: an administrator's edits are never overwritten (the example stays in the
# documentation directory); in the Debian package it is a conffile, which dpkg handles.
if(EXISTS "$ENV{DESTDIR}${_arbrun_limits}")
  message(STATUS "Keeping: $ENV{DESTDIR}${_arbrun_limits} (the example is limits.conf.example in "
                 "${_arbrun_docdir})")
else()
  file(INSTALL DESTINATION "${_arbrun_etc}/arbrun" TYPE FILE FILES "${ARBRUN_LIMITS_FILE}")
endif()

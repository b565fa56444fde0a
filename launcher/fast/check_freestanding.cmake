# Fails the build when the fast start's object refers to any symbol it does not define but _start: it runs
# before glibc's start-up, where calling into glibc (memcpy and strlen are IFUNCs resolved during
# that start-up) or reading a stack-protector canary from TLS crashes. Run after the archive is
# made: cmake -DARCHIVE=... -DNM=... -P check_freestanding.cmake
execute_process(COMMAND ${NM} --undefined-only ${ARCHIVE} OUTPUT_VARIABLE undefined
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot list the symbols of ${ARCHIVE}")
endif()
string(REGEX REPLACE "[^\n]*:\n" "" undefined "${undefined}")  # the member's name line
# _start is where the fast start hands over when it does not exec (arbrunEntry jumps there).
string(REGEX REPLACE "[ \t]*U _start\n" "" undefined "${undefined}")
string(STRIP "${undefined}" undefined)
if(NOT undefined STREQUAL "")
  message(FATAL_ERROR "the fast start (${ARCHIVE}) calls code that is not usable before glibc's "
                      "start-up (fast_start.h):\n${undefined}")
endif()

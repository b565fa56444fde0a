# Fails the build when libarbrun.so holds a static unwinder (libgcc_eh) or depends on libgcc_s:
# either would undo src/libc/unwinder.cc (two unwinders in one process, or libgcc_s loaded at every
# start). Run after linking: cmake -DLIBRARY=... -DNM=... -P check_no_static_unwinder.cmake
execute_process(COMMAND ${NM} ${LIBRARY} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot list the symbols of ${LIBRARY}")
endif()
if(symbols MATCHES "_Unwind_Find_FDE|uw_frame_state_for")
  message(FATAL_ERROR "${LIBRARY} links a static unwinder (libgcc_eh); see src/libc/unwinder.cc")
endif()
execute_process(COMMAND ${NM} -D --undefined-only ${LIBRARY} OUTPUT_VARIABLE undefined)
if(undefined MATCHES "@GCC_")
  message(FATAL_ERROR "${LIBRARY} still depends on libgcc_s:\n${undefined}")
endif()
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY} OUTPUT_VARIABLE exported)
if(exported MATCHES "_Unwind_")
  message(FATAL_ERROR "${LIBRARY} exports the unwinder's entry points: they would interpose the "
                      "program's libgcc_s (src/libc/unwinder.cc must define them hidden)")
endif()

# Loadable modules (tilepick._core, libtilepick_c.so) must use the process's shared libstdc++.
# Some toolchains (the lent GPU machines) have only libstdc++.a next to g++, so -lstdc++ silently
# links a private copy; in a Python process that already loaded libstdc++.so.6 (torch) the dynamic
# linker then binds part of that copy's symbols to the shared one, and iostreams crash. In that case
# the system's libstdc++.so.6 is linked by path, which keeps the archive out.
function(tilepick_use_shared_libstdcxx)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                  OUTPUT_VARIABLE so OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${so}" AND EXISTS "${so}")
    return()  # the usual case: the shared library is what -lstdc++ finds
  endif()
  find_file(TILEPICK_LIBSTDCXX_SO libstdc++.so.6
            PATHS /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /usr/lib
            NO_DEFAULT_PATH)
  if(TILEPICK_LIBSTDCXX_SO)
    message(STATUS "tilepick: ${CMAKE_CXX_COMPILER} has no shared libstdc++; linking ${TILEPICK_LIBSTDCXX_SO}")
    link_libraries(${TILEPICK_LIBSTDCXX_SO})
  else()
    message(WARNING "tilepick: no shared libstdc++ found; Python modules may carry a private copy "
                    "that clashes with torch's in one process")
  endif()
endfunction()

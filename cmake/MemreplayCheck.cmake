# memreplay_add_check(): a CTest test that runs `memreplay check` (exit 0 passes; 1, a regression,
# and 2, bad input, fail the test).
#
#   include(MemreplayCheck)   # with this folder on CMAKE_MODULE_PATH
#   memreplay_add_check(NAME memory_gpt2
#                       TRACES ${CMAKE_BINARY_DIR}/gpt2.mrt
#                       POLICIES pytorch pytorch:expandable_segments:True
#                       BASELINE ${CMAKE_SOURCE_DIR}/ci/memory-baseline.json
#                       [JUNIT file.xml] [MARKDOWN file.md] [MEMREPLAY /path/to/memreplay]
#                       [ARGS --max-overhead 1.10 --tolerance reserved_peak=2% ...])
# MEMREPLAY defaults to the `memreplay` target when the project builds it, else the program found
# on PATH (or MEMREPLAY_EXECUTABLE).
function(memreplay_add_check)
  cmake_parse_arguments(MRC "" "NAME;BASELINE;MEMREPLAY;JUNIT;MARKDOWN" "TRACES;POLICIES;ARGS" ${ARGN})
  if(NOT MRC_NAME OR NOT MRC_TRACES OR NOT MRC_POLICIES)
    message(FATAL_ERROR "memreplay_add_check: NAME, TRACES and POLICIES are required")
  endif()
  if(MRC_MEMREPLAY)
    set(memreplay "${MRC_MEMREPLAY}")
  elseif(TARGET memreplay)
    set(memreplay "$<TARGET_FILE:memreplay>")
  else()
    find_program(MEMREPLAY_EXECUTABLE memreplay REQUIRED)
    set(memreplay "${MEMREPLAY_EXECUTABLE}")
  endif()
  set(arguments check ${MRC_TRACES})
  foreach(policy IN LISTS MRC_POLICIES)
    list(APPEND arguments --policy "${policy}")
  endforeach()
  if(MRC_BASELINE)
    list(APPEND arguments --baseline "${MRC_BASELINE}")
  endif()
  if(MRC_JUNIT)
    list(APPEND arguments --junit "${MRC_JUNIT}")
  endif()
  if(MRC_MARKDOWN)
    list(APPEND arguments --markdown "${MRC_MARKDOWN}")
  endif()
  list(APPEND arguments ${MRC_ARGS})
  add_test(NAME ${MRC_NAME} COMMAND "${memreplay}" ${arguments})
  set_tests_properties(${MRC_NAME} PROPERTIES LABELS memreplay-check)
endfunction()

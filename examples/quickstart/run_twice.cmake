# The quickstart's promise, checked: run twice on a fresh cache directory, the first
# process compiles both kernels and the second loads both, relinked to the live helper.
# cmake -DQUICKSTART=<program> -DDIR=<scratch directory> -P run_twice.cmake
file(REMOVE_RECURSE ${DIR})
foreach(run first second)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env QUICKSTART_CACHE_DIR=${DIR} ${QUICKSTART}
                  OUTPUT_VARIABLE out_${run} RESULT_VARIABLE status_${run})
  if(NOT status_${run} EQUAL 0)
    message(FATAL_ERROR "the ${run} run exited ${status_${run}}:\n${out_${run}}")
  endif()
endforeach()
file(REMOVE_RECURSE ${DIR})
if(NOT out_first MATCHES "helper: compiled\nmain: compiled \\(calls helper\\)")
  message(FATAL_ERROR "the first run did not compile both kernels:\n${out_first}")
endif()
if(NOT out_second MATCHES "helper: loaded\nmain: loaded \\(calls helper\\)")
  message(FATAL_ERROR "the second run did not load both kernels:\n${out_second}")
endif()

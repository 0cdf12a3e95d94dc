# cmake -DPROGRAM=... -DEXPECTED=... -P compare_output.cmake
# Runs PROGRAM and fails unless it exits 0 and its stdout is EXPECTED's content, byte
# for byte. stderr is shown but not compared (sanitizers and PREFIX_LOG write there).
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE status OUTPUT_VARIABLE actual ERROR_VARIABLE errors)
file(READ ${EXPECTED} expected)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${status}\nstdout:\n${actual}\nstderr:\n${errors}")
endif()
if(NOT actual STREQUAL expected)
  get_filename_component(name ${EXPECTED} NAME)
  message(FATAL_ERROR "the output of ${PROGRAM} differs from ${name}\n"
                      "--- expected\n${expected}--- actual\n${actual}--- stderr\n${errors}")
endif()

# The fuzz harnesses in the regular build (g++, no fuzzer runtime): each harness linked with
# replay_main.cpp runs once over the seed corpus (fuzz_corpus_TARGET) and over each crash input
# the fuzzers found (fuzz_crash_TARGET_FILE, from tests/fuzz/crashes/TARGET/). Crash inputs of a
# class listed in tests/fuzz/known_crashes.txt (being fixed on other branches) are registered
# DISABLED until their line is deleted; scripts/fuzz.sh runs the fuzzers themselves.
set(ZERO_FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
file(STRINGS ${ZERO_FUZZ_DIR}/known_crashes.txt zero_fuzz_known REGEX "^[a-z]+ [a-z0-9-]+ ")
foreach(target config data flags manifest checkpoint)
  add_executable(fuzz_replay_${target} fuzz/fuzz_${target}.cpp fuzz/fuzz_scratch.cpp fuzz/replay_main.cpp
                 ${PROJECT_SOURCE_DIR}/src/cli/flags.cpp)  # the CLI's parser is not in libzero
  target_link_libraries(fuzz_replay_${target} PRIVATE zero)
  target_include_directories(fuzz_replay_${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME fuzz_corpus_${target} COMMAND fuzz_replay_${target} ${ZERO_FUZZ_DIR}/corpus/${target})
  set_tests_properties(fuzz_corpus_${target} PROPERTIES TIMEOUT 60)
  file(GLOB crashes ${ZERO_FUZZ_DIR}/crashes/${target}/*)
  foreach(input ${crashes})
    get_filename_component(name ${input} NAME)
    add_test(NAME fuzz_crash_${target}_${name} COMMAND fuzz_replay_${target} ${input})
    set_tests_properties(fuzz_crash_${target}_${name} PROPERTIES TIMEOUT 60)
    foreach(line ${zero_fuzz_known})
      string(REPLACE " " ";" fields "${line}")
      list(GET fields 0 known_target)
      list(GET fields 1 known_class)
      if(known_target STREQUAL target AND name MATCHES "^${known_class}-")
        set_tests_properties(fuzz_crash_${target}_${name} PROPERTIES DISABLED TRUE)
      endif()
    endforeach()
  endforeach()
endforeach()

// A shared library linked without a GNU build-id (tests/CMakeLists.txt), which
// build_id_test.cpp loads from a copy: such a library is identified by its file's content.
extern "C" int compile_cache_test_no_build_id(int x) { return x * 3 + 1; }

/// What this build of the library "generates": build_id_test.cpp makes other builds of it,
/// of the same size, by changing the last letter in a copy of the file.
extern "C" char const compile_cache_test_no_build_id_marker[] = "compile_cache no-build-id marker A";

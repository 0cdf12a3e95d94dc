// A shared library linked without a GNU build-id (tests/CMakeLists.txt), which
// build_id_test.cpp loads from a copy: such a library is identified by its file.
extern "C" int compile_cache_test_no_build_id(int x) { return x * 3 + 1; }

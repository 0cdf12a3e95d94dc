// Marker standing where Catch2 v2's single header would be: says it was the one included.
#pragma once
#define COMPILE_CACHE_TEST_SAW_CATCH2_V2 1

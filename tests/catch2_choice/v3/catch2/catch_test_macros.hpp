// Marker standing where Catch2 v3's header would be: says it was the one included.
#pragma once
#define COMPILE_CACHE_TEST_SAW_CATCH2_V3 1

# Cross-building for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu, against the
# arm64 packages of Debian multiarch (libboost-serialization-dev:arm64), and running the
# results under user-mode emulation (qemu-user). scripts/test_arm64.sh uses it:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: the arm64 libraries and their CMake packages are under
# /usr/lib/aarch64-linux-gnu; headers-only packages (Catch2, Boost's headers) are shared.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# ctest, catch_discover_tests and the tests' helper programs run through this. Its
# default CPU ("max") has the ARMv8 SHA-2 and CRC32 extensions. No -L
# /usr/aarch64-linux-gnu: the programs then start with the dynamic loader of
# libc6-arm64-cross but find the C library of multiarch libc6:arm64 (which arm64 Boost
# brings) first, two builds of glibc that need not match (2.36-8cross1 and
# 2.36-9+deb12u14 here), and with them pthread_create and fork never returned. Without
# -L, the loader is /lib/ld-linux-aarch64.so.1 of libc6:arm64 itself.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)

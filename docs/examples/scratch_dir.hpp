// A fresh directory for one run of a tutorial program, removed with everything in
// it when the program ends, so that each run starts from an empty cache and prints
// the same output every time.
#pragma once

#include <stdlib.h> // mkdtemp (POSIX)

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

class scratch_dir {
public:
    scratch_dir() {
        std::string path = (std::filesystem::temp_directory_path() / "compile-cache-tutorial-XXXXXX").string();
        if (::mkdtemp(path.data()) == nullptr) throw std::runtime_error("cannot make a temporary directory");
        path_ = path;
    }
    ~scratch_dir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    scratch_dir(scratch_dir const&) = delete;
    scratch_dir& operator=(scratch_dir const&) = delete;

    std::string const& path() const noexcept { return path_; }
    /// A folder inside it (made by the first store into it).
    std::string operator/(std::string const& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

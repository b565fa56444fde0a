// A private directory for a launcher test, under $TMPDIR (or /tmp), removed with its contents on
// destruction.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace launcher_test {

class TempDir {
  public:
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/arbrun-test-XXXXXX";
        if (mkdtemp(pattern.data())) path_ = std::filesystem::canonical(pattern);
    }
    ~TempDir() {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    // Empty when mkdtemp failed (tests assert it is not).
    const std::filesystem::path& path() const { return path_; }

    // A file at `relative` (parents created) holding `bytes`, with `mode`; its absolute path.
    std::string write(const std::string& relative, const std::string& bytes,
                      mode_t mode = 0644) const {
        const std::filesystem::path p = path_ / relative;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << bytes;
        chmod(p.c_str(), mode);
        return p.string();
    }

    // An empty file at `relative` with `mode`; its absolute path.
    std::string touch(const std::string& relative, mode_t mode = 0644) const {
        return write(relative, "", mode);
    }

  private:
    std::filesystem::path path_;
};

}  // namespace launcher_test

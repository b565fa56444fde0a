// Bounds-checked little-endian readers/writers for protocol payloads (host is little-endian; the
// static_assert below keeps it that way).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace arbproto::detail {

static_assert(std::endian::native == std::endian::little, "protocol assumes a little-endian host");

// Appends fixed-width values; memcpy keeps it free of alignment and aliasing concerns.
class Writer {
  public:
    explicit Writer(std::vector<uint8_t>* out) : out_(out) {}
    template <typename T>
    void put(T value) {
        uint8_t raw[sizeof(T)];
        std::memcpy(raw, &value, sizeof(T));
        out_->insert(out_->end(), raw, raw + sizeof(T));
    }
    void bytes(const std::string& s) { out_->insert(out_->end(), s.begin(), s.end()); }

  private:
    std::vector<uint8_t>* out_;
};

// Reads fixed-width values; every read checks the remaining length so a short payload fails
// cleanly.
class Reader {
  public:
    explicit Reader(std::span<const uint8_t> in) : in_(in) {}
    template <typename T>
    bool get(T* value) {
        if (in_.size() - pos_ < sizeof(T)) return false;
        std::memcpy(value, in_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    bool string(size_t length, std::string* s) {
        if (in_.size() - pos_ < length) return false;
        s->assign(reinterpret_cast<const char*>(in_.data() + pos_), length);
        pos_ += length;
        return true;
    }
    size_t remaining() const { return in_.size() - pos_; }
    bool done() const { return pos_ == in_.size(); }

  private:
    std::span<const uint8_t> in_;
    size_t pos_ = 0;
};

}  // namespace arbproto::detail

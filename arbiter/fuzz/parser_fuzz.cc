// libFuzzer target for the protocol parsers: the arbiter's client-frame decoder (untrusted input)
// fed as a byte stream, plus the client's arbiter-frame decoder. Built by run.sh with clang only.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "arbproto/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::span<const uint8_t> bytes(data, size);
    // As the arbiter does: decode frames until the stream needs more bytes or is malformed.
    for (;;) {
        arbproto::ClientMessage message;
        size_t consumed = 0;
        std::string why;
        auto status = arbproto::decodeClientMessage(bytes, &message, &consumed, &why);
        if (status != arbproto::DecodeStatus::kOk) break;
        if (consumed == 0 || consumed > bytes.size()) __builtin_trap();
        // Whatever decodes must re-encode to the same bytes.
        std::vector<uint8_t> again;
        arbproto::encode(message, &again);
        if (again.size() != consumed || !std::equal(again.begin(), again.end(), bytes.begin()))
            __builtin_trap();
        bytes = bytes.subspan(consumed);
    }
    arbproto::ServerMessage reply;
    size_t consumed = 0;
    std::string why;
    arbproto::decodeServerMessage(std::span<const uint8_t>(data, size), &reply, &consumed, &why);
    return 0;
}

// Framing and (de)serialisation of protocol messages. Every decoder validates every field and
// reports why input is malformed; callers close the connection on kMalformed. No allocation beyond
// the message's own strings/vectors; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "arbproto/messages.h"

namespace arbproto {

enum class DecodeStatus { kOk, kIncomplete, kMalformed };

struct Frame {
    MsgType type;
    std::span<const uint8_t> payload;
};

// Splits the first frame off `bytes`. kIncomplete: need more bytes (nothing consumed). kMalformed:
// header invalid (unknown type, non-zero flags, payload longer than maxPayload).
DecodeStatus splitFrame(std::span<const uint8_t> bytes, uint32_t maxPayload, Frame* frame,
                        size_t* consumed, std::string* why);

// Parses one frame's payload. Returns false (with `why`) on any invalid field or wrong size.
bool parseClientMessage(const Frame& frame, ClientMessage* out, std::string* why);
bool parseServerMessage(const Frame& frame, ServerMessage* out, std::string* why);

// splitFrame + parse in one step, for byte streams from clients (the arbiter) or from the arbiter.
DecodeStatus decodeClientMessage(std::span<const uint8_t> bytes, ClientMessage* out,
                                 size_t* consumed, std::string* why);
DecodeStatus decodeServerMessage(std::span<const uint8_t> bytes, ServerMessage* out,
                                 size_t* consumed, std::string* why);

// Appends a complete frame (header + payload) to `out`.
void encode(const ClientMessage& message, std::vector<uint8_t>* out);
void encode(const ServerMessage& message, std::vector<uint8_t>* out);

const char* typeName(MsgType type);

}  // namespace arbproto

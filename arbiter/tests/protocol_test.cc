// Codec tests: every message round-trips, and every malformed form is rejected with a reason.
#include <gtest/gtest.h>

#include <cstring>

#include "arbproto/codec.h"

namespace arbproto {
namespace {

std::vector<uint8_t> frameOf(const ClientMessage& m) {
    std::vector<uint8_t> bytes;
    encode(m, &bytes);
    return bytes;
}

// Builds a raw frame with an arbitrary header and payload.
std::vector<uint8_t> rawFrame(uint16_t type, const std::vector<uint8_t>& payload,
                              uint16_t flags = 0, int64_t lengthOverride = -1) {
    std::vector<uint8_t> out(8 + payload.size());
    uint32_t length = lengthOverride >= 0 ? static_cast<uint32_t>(lengthOverride)
                                          : static_cast<uint32_t>(payload.size());
    memcpy(out.data(), &length, 4);
    memcpy(out.data() + 4, &type, 2);
    memcpy(out.data() + 6, &flags, 2);
    for (size_t i = 0; i < payload.size(); i++) out[8 + i] = payload[i];
    return out;
}

DecodeStatus decode(const std::vector<uint8_t>& bytes, ClientMessage* m, std::string* why) {
    size_t consumed = 0;
    return decodeClientMessage(bytes, m, &consumed, why);
}

// Patches a field of an encoded client frame at payload offset `at`.
template <typename T>
std::vector<uint8_t> patched(const ClientMessage& m, size_t at, T value) {
    auto bytes = frameOf(m);
    memcpy(bytes.data() + kHeaderSize + at, &value, sizeof(T));
    return bytes;
}

void expectMalformed(const std::vector<uint8_t>& bytes, const std::string& reasonPart) {
    ClientMessage m;
    std::string why;
    EXPECT_EQ(decode(bytes, &m, &why), DecodeStatus::kMalformed);
    EXPECT_NE(why.find(reasonPart), std::string::npos) << "reason: " << why;
}

TEST(Codec_RoundTrip, ClientMessages) {
    Attach attach;
    attach.sessionId = 0x1234567890abcdefull;
    attach.tid = 4242;
    attach.claimedCore = 17;
    SetRequest request;
    request.perPriority = {1, 0, 2, 0, 0, 0, 0, 3};
    request.minCores = 1;
    request.maxCores = 5;
    ReleaseDone done;
    done.core = 3;
    done.generation = 99;
    Hello hello;
    hello.role = Role::kObserver;
    hello.flags = kHelloFlagReconnect;
    std::vector<ClientMessage> all = {hello, attach,    request,      Block{},
                                      done,  Goodbye{}, StatusQuery{}};
    for (const auto& m : all) {
        ClientMessage out;
        std::string why;
        ASSERT_EQ(decode(frameOf(m), &out, &why), DecodeStatus::kOk) << why;
        EXPECT_EQ(out.index(), m.index());
    }
    ClientMessage out;
    std::string why;
    ASSERT_EQ(decode(frameOf(attach), &out, &why), DecodeStatus::kOk);
    EXPECT_EQ(std::get<Attach>(out).sessionId, attach.sessionId);
    EXPECT_EQ(std::get<Attach>(out).tid, 4242);
    EXPECT_EQ(std::get<Attach>(out).claimedCore, 17);
    ASSERT_EQ(decode(frameOf(request), &out, &why), DecodeStatus::kOk);
    EXPECT_EQ(std::get<SetRequest>(out).perPriority, request.perPriority);
    EXPECT_EQ(std::get<SetRequest>(out).maxCores, 5u);
    ASSERT_EQ(decode(frameOf(hello), &out, &why), DecodeStatus::kOk);
    EXPECT_EQ(std::get<Hello>(out).role, Role::kObserver);
    EXPECT_EQ(std::get<Hello>(out).flags, kHelloFlagReconnect);
}

TEST(Codec_RoundTrip, ServerMessages) {
    StatusReply status;
    status.epoch = 7;
    status.managed = {1, 2, 3};
    ProcessStatus p;
    p.pid = 10;
    p.uid = 1000;
    p.command = "server \"x\"";
    p.requested[2] = 4;
    p.granted = {1, 3};
    p.pendingReleases = {3};
    p.carriers = 4;
    status.processes = {p, p};
    std::vector<ServerMessage> all = {HelloReply{1, 0, 4096, 5, 6},
                                      AttachReply{AttachStatus::kClaimRefused, 3, 9},
                                      Granted{2, 11},
                                      RequestAck{},
                                      ErrorReply{ErrorCode::kVersion, "no"},
                                      status};
    for (const auto& m : all) {
        std::vector<uint8_t> bytes;
        encode(m, &bytes);
        ServerMessage out;
        size_t consumed = 0;
        std::string why;
        ASSERT_EQ(decodeServerMessage(bytes, &out, &consumed, &why), DecodeStatus::kOk) << why;
        EXPECT_EQ(consumed, bytes.size());
        EXPECT_EQ(out.index(), m.index());
    }
    std::vector<uint8_t> bytes;
    encode(status, &bytes);
    ServerMessage out;
    size_t consumed;
    std::string why;
    ASSERT_EQ(decodeServerMessage(bytes, &out, &consumed, &why), DecodeStatus::kOk);
    const auto& s = std::get<StatusReply>(out);
    ASSERT_EQ(s.processes.size(), 2u);
    EXPECT_EQ(s.processes[1].command, p.command);
    EXPECT_EQ(s.processes[1].granted, p.granted);
    EXPECT_EQ(s.processes[1].pendingReleases, p.pendingReleases);
    EXPECT_EQ(s.managed, status.managed);
}

TEST(Codec_Stream, IncompleteUntilWholeFrame) {
    auto bytes = frameOf(SetRequest{});
    for (size_t n = 0; n < bytes.size(); n++) {
        ClientMessage m;
        std::string why;
        size_t consumed = 0;
        EXPECT_EQ(decodeClientMessage(std::span(bytes.data(), n), &m, &consumed, &why),
                  DecodeStatus::kIncomplete)
            << n;
    }
}

TEST(Codec_Stream, TwoFramesBackToBack) {
    auto bytes = frameOf(Block{});
    auto second = frameOf(Goodbye{});
    bytes.insert(bytes.end(), second.begin(), second.end());
    ClientMessage m;
    std::string why;
    size_t consumed = 0;
    ASSERT_EQ(decodeClientMessage(bytes, &m, &consumed, &why), DecodeStatus::kOk);
    EXPECT_TRUE(std::holds_alternative<Block>(m));
    ASSERT_EQ(decodeClientMessage(std::span(bytes).subspan(consumed), &m, &consumed, &why),
              DecodeStatus::kOk);
    EXPECT_TRUE(std::holds_alternative<Goodbye>(m));
}

TEST(Codec_Malformed, HeaderForms) {
    expectMalformed(rawFrame(0, {}), "unknown message type");
    expectMalformed(rawFrame(8, {}), "unknown message type");
    expectMalformed(rawFrame(100, {}), "unknown message type");
    expectMalformed(rawFrame(0xffff, {}), "unknown message type");
    expectMalformed(rawFrame(4, {}, 1), "flags");
    expectMalformed(rawFrame(4, {}, 0, kMaxClientPayload + 1), "too long");
    expectMalformed(rawFrame(4, {}, 0, 0xffffffffu), "too long");
    // A server message type sent by a client.
    expectMalformed(rawFrame(103, std::vector<uint8_t>(16)), "not a client message");
}

TEST(Codec_Malformed, WrongPayloadSizes) {
    std::vector<ClientMessage> all = {Hello{}, Attach{1, 0, 1, 1, -1}, SetRequest{},
                                      ReleaseDone{0, 1}};
    for (const auto& m : all) {
        auto bytes = frameOf(m);
        uint16_t type;
        memcpy(&type, bytes.data() + 4, 2);
        ASSERT_GT(bytes.size(), kHeaderSize);
        std::vector<uint8_t> payload(bytes.begin() + kHeaderSize, bytes.end());
        std::vector<uint8_t> shorter(bytes.begin() + kHeaderSize, bytes.end() - 1);
        std::vector<uint8_t> longer(bytes.begin() + kHeaderSize, bytes.end());
        longer.resize(longer.size() + 1);
        expectMalformed(rawFrame(type, shorter), "wrong payload size");
        expectMalformed(rawFrame(type, longer), "wrong payload size");
        expectMalformed(rawFrame(type, {}), "wrong payload size");
    }
    for (uint16_t type : {4, 6, 7}) expectMalformed(rawFrame(type, {0}), "no payload");
}

TEST(Codec_Malformed, HelloFields) {
    Hello h;
    expectMalformed(patched<uint32_t>(h, 0, 0xdeadbeef), "bad magic");
    expectMalformed(patched<uint16_t>(h, 4, 2), "unsupported protocol version");
    expectMalformed(patched<uint16_t>(h, 4, 0), "unsupported protocol version");
    expectMalformed(patched<uint32_t>(h, 8, 0), "unknown role");
    expectMalformed(patched<uint32_t>(h, 8, 3), "unknown role");
    expectMalformed(patched<uint32_t>(h, 12, 2), "unknown flags");
    expectMalformed(patched<uint32_t>(h, 16, 1), "reserved");
    // A newer minor version is accepted.
    ClientMessage m;
    std::string why;
    EXPECT_EQ(decode(patched<uint16_t>(h, 6, 9), &m, &why), DecodeStatus::kOk);
}

TEST(Codec_Malformed, AttachFields) {
    Attach a{1, 0, 77, 100, -1};
    expectMalformed(patched<uint32_t>(a, 0, 1), "bad magic");
    expectMalformed(patched<uint16_t>(a, 4, 3), "unsupported protocol version");
    expectMalformed(patched<uint64_t>(a, 8, 0), "session id 0");
    expectMalformed(patched<int32_t>(a, 16, 0), "bad tid");
    expectMalformed(patched<int32_t>(a, 16, -5), "bad tid");
    expectMalformed(patched<int32_t>(a, 20, -2), "claimed core");
    expectMalformed(patched<int32_t>(a, 20, kMaxCoreIds), "claimed core");
    ClientMessage m;
    std::string why;
    EXPECT_EQ(decode(patched<int32_t>(a, 20, kMaxCoreIds - 1), &m, &why), DecodeStatus::kOk);
}

TEST(Codec_Malformed, SetRequestFields) {
    SetRequest r;
    for (size_t level = 0; level < 8; level++)
        expectMalformed(patched<uint32_t>(r, level * 4, kMaxCoreIds + 1), "count too large");
    expectMalformed(patched<uint32_t>(r, 32, kMaxCoreIds + 1), "minCores too large");
    SetRequest inverted;
    inverted.minCores = 3;
    inverted.maxCores = 2;
    expectMalformed(frameOf(inverted), "minCores > maxCores");
}

TEST(Codec_Malformed, ReleaseDoneFields) {
    ReleaseDone d{1, 5};
    expectMalformed(patched<int32_t>(d, 0, -1), "core out of range");
    expectMalformed(patched<int32_t>(d, 0, kMaxCoreIds), "core out of range");
    expectMalformed(patched<uint32_t>(d, 4, 1), "reserved");
    expectMalformed(patched<uint64_t>(d, 8, 0), "generation 0");
}

TEST(Codec_Malformed, ServerFramesFromABrokenArbiter) {
    StatusReply status;
    status.managed = {1};
    std::vector<uint8_t> bytes;
    encode(status, &bytes);
    // Claim 1000 managed cores in a tiny payload: rejected before anything is allocated.
    uint32_t huge = 1000;
    memcpy(bytes.data() + kHeaderSize + 8, &huge, 4);
    ServerMessage out;
    size_t consumed;
    std::string why;
    EXPECT_EQ(decodeServerMessage(bytes, &out, &consumed, &why), DecodeStatus::kMalformed);
    std::vector<uint8_t> granted;
    encode(Granted{kMaxCoreIds, 1}, &granted);
    EXPECT_EQ(decodeServerMessage(granted, &out, &consumed, &why), DecodeStatus::kMalformed);
    std::vector<uint8_t> client = frameOf(Block{});
    EXPECT_EQ(decodeServerMessage(client, &out, &consumed, &why), DecodeStatus::kMalformed);
}

// Every truncation and every single-byte corruption of every message either decodes or is rejected:
// never a crash, never an out-of-range value accepted.
TEST(Codec_Malformed, ExhaustiveByteFlips) {
    std::vector<ClientMessage> all = {Hello{},      Attach{1, 0, 3, 9, 2}, SetRequest{},
                                      Block{},      ReleaseDone{2, 8},     Goodbye{},
                                      StatusQuery{}};
    for (const auto& m : all) {
        auto bytes = frameOf(m);
        for (size_t i = 0; i < bytes.size(); i++) {
            for (int bit = 0; bit < 8; bit++) {
                auto copy = bytes;
                copy[i] ^= static_cast<uint8_t>(1u << bit);
                ClientMessage out;
                std::string why;
                if (decode(copy, &out, &why) != DecodeStatus::kOk) continue;
                if (auto* r = std::get_if<SetRequest>(&out)) {
                    EXPECT_LE(r->minCores, r->maxCores);
                }
                if (auto* d = std::get_if<ReleaseDone>(&out)) {
                    EXPECT_LT(d->core, kMaxCoreIds);
                }
            }
        }
    }
}

}  // namespace
}  // namespace arbproto

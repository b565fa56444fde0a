// Message types of the core-arbiter protocol (see arbiter/PROTOCOL.md). Plain values: no pointers,
// no file descriptors; the codec (codec.h) turns them into frames and back.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace arbproto {

// Where the arbiter listens and clients look unless told otherwise (a macro as well, so that help
// texts can be built from it at compile time).
#define ARBPROTO_DEFAULT_SOCKET "/run/arbrun/arbiter.sock"
constexpr const char* kDefaultSocketPath = ARBPROTO_DEFAULT_SOCKET;

constexpr uint32_t kMagic = 0x43425241;  // "ARBC" in memory order
constexpr uint16_t kVersionMajor = 1;
constexpr uint16_t kVersionMinor = 0;
constexpr int kPriorityLevels = 8;
// Core ids are indexes into the shared release page, so they are bounded by its size.
constexpr int kMaxCoreIds = 4032;
// Largest payload a client may send; every client message is far smaller.
constexpr uint32_t kMaxClientPayload = 64;
// Largest payload the arbiter sends (a status reply for a large machine).
constexpr uint32_t kMaxServerPayload = 1u << 20;
constexpr size_t kHeaderSize = 8;
constexpr size_t kMaxCommandLength = 64;
constexpr size_t kMaxErrorText = 200;

enum class MsgType : uint16_t {
    kHello = 1,
    kAttach = 2,
    kSetRequest = 3,
    kBlock = 4,
    kReleaseDone = 5,
    kGoodbye = 6,
    kStatusQuery = 7,
    kHelloReply = 101,
    kAttachReply = 102,
    kGranted = 103,
    kRequestAck = 104,
    kError = 105,
    kStatusReply = 106,
};

enum class Role : uint32_t { kProcess = 1, kObserver = 2 };
constexpr uint32_t kHelloFlagReconnect = 1;

// Client -> arbiter.
struct Hello {
    uint16_t major = kVersionMajor;
    uint16_t minor = kVersionMinor;
    Role role = Role::kProcess;
    uint32_t flags = 0;
};
struct Attach {
    uint16_t major = kVersionMajor;
    uint16_t minor = kVersionMinor;
    uint64_t sessionId = 0;
    int32_t tid = 0;
    int32_t claimedCore = -1;  // core the carrier runs on after an arbiter restart, else -1
};
struct SetRequest {
    std::array<uint32_t, kPriorityLevels> perPriority{};
    uint32_t minCores = 0;
    uint32_t maxCores = UINT32_MAX;
};
struct Block {};
struct ReleaseDone {
    int32_t core = -1;
    uint64_t generation = 0;
};
struct Goodbye {};
struct StatusQuery {};

using ClientMessage =
    std::variant<Hello, Attach, SetRequest, Block, ReleaseDone, Goodbye, StatusQuery>;

// Arbiter -> client.
struct HelloReply {
    uint16_t major = kVersionMajor;
    uint16_t minor = kVersionMinor;
    uint32_t pageSize = 0;  // 0 for observers (no page is passed)
    uint64_t sessionId = 0;
    uint64_t epoch = 0;  // changes on every arbiter start
};
enum class AttachStatus : uint32_t { kOk = 0, kClaimRefused = 1 };
struct AttachReply {
    AttachStatus status = AttachStatus::kOk;
    int32_t core = -1;  // adopted (or refused) core, -1 when nothing was claimed
    uint64_t generation = 0;
};
struct Granted {
    int32_t core = -1;
    uint64_t generation = 0;
};
struct RequestAck {
    std::array<uint32_t, kPriorityLevels> perPriority{};  // the request as clamped by the limits
    uint32_t minCores = 0;
    uint32_t maxCores = UINT32_MAX;
    uint32_t clamped = 0;  // 1 when the limits changed the request
};
enum class ErrorCode : uint32_t {
    kProtocol = 1,
    kVersion = 2,
    kUnknownSession = 3,
    kPermission = 4,
    kInternal = 5,
};
struct ErrorReply {
    ErrorCode code = ErrorCode::kProtocol;
    std::string text;
};
struct ProcessStatus {
    int32_t pid = 0;
    uint32_t uid = 0;
    std::string command;
    std::array<uint32_t, kPriorityLevels> requested{};
    uint32_t minCores = 0;
    uint32_t maxCores = UINT32_MAX;
    uint32_t carriers = 0;
    std::vector<int32_t> granted;
    std::vector<int32_t> pendingReleases;
};
struct StatusReply {
    uint64_t epoch = 0;
    std::vector<int32_t> managed;
    std::vector<ProcessStatus> processes;
};

using ServerMessage =
    std::variant<HelloReply, AttachReply, Granted, RequestAck, ErrorReply, StatusReply>;

}  // namespace arbproto

// Frame format: u32 payload length, u16 type, u16 flags (must be 0), then the payload.
#include "arbproto/codec.h"

#include <type_traits>

#include "bytes.h"

namespace arbproto {
namespace {

using detail::Reader;
using detail::Writer;

// Sets the reason and returns false, so parsers read as a chain of checks.
bool fail(std::string* why, const std::string& text) {
    if (why) *why = text;
    return false;
}

// Types 1-7 (client) and 101-106 (arbiter); anything else is malformed at the header.
bool knownType(uint16_t t) {
    return (t >= 1 && t <= 7) || (t >= 101 && t <= 106);
}

// Version check shared by Hello and Attach: the major version must match exactly.
bool checkVersion(uint16_t major, std::string* why) {
    if (major != kVersionMajor)
        return fail(why, "unsupported protocol version " + std::to_string(major) +
                             " (arbiter speaks " + std::to_string(kVersionMajor) + ")");
    return true;
}

// A core id must index the release page.
bool validCore(int32_t core) {
    return core >= 0 && core < kMaxCoreIds;
}

// Exact size, magic, major version, known role, no unknown flag, reserved zero.
bool parseHello(Reader& r, Hello* m, std::string* why) {
    uint32_t magic, role, flags, reserved;
    if (!r.get(&magic) || !r.get(&m->major) || !r.get(&m->minor) || !r.get(&role) ||
        !r.get(&flags) || !r.get(&reserved) || !r.done())
        return fail(why, "hello: wrong payload size");
    if (magic != kMagic) return fail(why, "hello: bad magic");
    if (!checkVersion(m->major, why)) return false;
    if (role != static_cast<uint32_t>(Role::kProcess) &&
        role != static_cast<uint32_t>(Role::kObserver))
        return fail(why, "hello: unknown role " + std::to_string(role));
    if (flags & ~kHelloFlagReconnect) return fail(why, "hello: unknown flags");
    if (reserved != 0) return fail(why, "hello: reserved field not zero");
    m->role = static_cast<Role>(role);
    m->flags = flags;
    return true;
}

// Exact size, magic, version, non-zero session, positive tid, claimed core -1 or in range.
bool parseAttach(Reader& r, Attach* m, std::string* why) {
    uint32_t magic;
    if (!r.get(&magic) || !r.get(&m->major) || !r.get(&m->minor) || !r.get(&m->sessionId) ||
        !r.get(&m->tid) || !r.get(&m->claimedCore) || !r.done())
        return fail(why, "attach: wrong payload size");
    if (magic != kMagic) return fail(why, "attach: bad magic");
    if (!checkVersion(m->major, why)) return false;
    if (m->sessionId == 0) return fail(why, "attach: session id 0");
    if (m->tid <= 0) return fail(why, "attach: bad tid");
    if (m->claimedCore != -1 && !validCore(m->claimedCore))
        return fail(why, "attach: claimed core out of range");
    return true;
}

// Counts bounded by the page size; min <= max.
bool parseSetRequest(Reader& r, SetRequest* m, std::string* why) {
    for (auto& n : m->perPriority)
        if (!r.get(&n)) return fail(why, "set-request: wrong payload size");
    if (!r.get(&m->minCores) || !r.get(&m->maxCores) || !r.done())
        return fail(why, "set-request: wrong payload size");
    for (auto n : m->perPriority)
        if (n > static_cast<uint32_t>(kMaxCoreIds))
            return fail(why, "set-request: count too large");
    if (m->minCores > static_cast<uint32_t>(kMaxCoreIds))
        return fail(why, "set-request: minCores too large");
    if (m->minCores > m->maxCores) return fail(why, "set-request: minCores > maxCores");
    return true;
}

// Core in range, reserved zero, generation non-zero (generations start at 1).
bool parseReleaseDone(Reader& r, ReleaseDone* m, std::string* why) {
    uint32_t reserved;
    if (!r.get(&m->core) || !r.get(&reserved) || !r.get(&m->generation) || !r.done())
        return fail(why, "release-done: wrong payload size");
    if (!validCore(m->core)) return fail(why, "release-done: core out of range");
    if (reserved != 0) return fail(why, "release-done: reserved field not zero");
    if (m->generation == 0) return fail(why, "release-done: generation 0");
    return true;
}

template <typename T>
// BLOCK, GOODBYE, STATUS_QUERY carry nothing.
bool parseEmpty(Reader& r, T*, std::string* why) {
    if (!r.done()) return fail(why, "message takes no payload");
    return true;
}

// Length checked against the bytes left before anything is allocated.
bool parseCoreList(Reader& r, std::vector<int32_t>* cores, std::string* why) {
    uint32_t n;
    if (!r.get(&n) || n > r.remaining() / sizeof(int32_t)) return fail(why, "bad core list length");
    cores->resize(n);
    for (auto& c : *cores)
        if (!r.get(&c) || !validCore(c)) return fail(why, "core id out of range");
    return true;
}

// One process record of a status reply.
bool parseProcessStatus(Reader& r, ProcessStatus* p, std::string* why) {
    uint16_t commLength;
    bool ok = r.get(&p->pid) && r.get(&p->uid);
    for (auto& n : p->requested) ok = ok && r.get(&n);
    ok = ok && r.get(&p->minCores) && r.get(&p->maxCores) && r.get(&p->carriers);
    if (!ok) return fail(why, "status: truncated process");
    if (!parseCoreList(r, &p->granted, why) || !parseCoreList(r, &p->pendingReleases, why))
        return false;
    if (!r.get(&commLength) || commLength > kMaxCommandLength || !r.string(commLength, &p->command))
        return fail(why, "status: bad command");
    return true;
}

// Bounded by the payload: a lying count cannot make the client allocate much.
bool parseStatusReply(Reader& r, StatusReply* m, std::string* why) {
    uint32_t n;
    if (!r.get(&m->epoch)) return fail(why, "status: truncated");
    if (!parseCoreList(r, &m->managed, why)) return false;
    // Each process takes at least 60 bytes, which bounds n before anything is allocated.
    if (!r.get(&n) || n > r.remaining() / 60) return fail(why, "status: bad process count");
    m->processes.resize(n);
    for (auto& p : m->processes)
        if (!parseProcessStatus(r, &p, why)) return false;
    if (!r.done()) return fail(why, "status: trailing bytes");
    return true;
}

// Arbiter -> client messages, validated as strictly as the client's.
bool parseServer(MsgType type, Reader& r, ServerMessage* out, std::string* why) {
    switch (type) {
        case MsgType::kHelloReply: {
            HelloReply m;
            if (!r.get(&m.major) || !r.get(&m.minor) || !r.get(&m.pageSize) ||
                !r.get(&m.sessionId) || !r.get(&m.epoch) || !r.done())
                return fail(why, "hello-reply: wrong payload size");
            if (!checkVersion(m.major, why)) return false;
            *out = m;
            return true;
        }
        case MsgType::kAttachReply: {
            AttachReply m;
            uint32_t status;
            if (!r.get(&status) || !r.get(&m.core) || !r.get(&m.generation) || !r.done())
                return fail(why, "attach-reply: wrong payload size");
            if (status > 1) return fail(why, "attach-reply: bad status");
            if (m.core != -1 && !validCore(m.core)) return fail(why, "attach-reply: bad core");
            m.status = static_cast<AttachStatus>(status);
            *out = m;
            return true;
        }
        case MsgType::kGranted: {
            Granted m;
            uint32_t reserved;
            if (!r.get(&m.core) || !r.get(&reserved) || !r.get(&m.generation) || !r.done())
                return fail(why, "granted: wrong payload size");
            if (!validCore(m.core) || m.generation == 0) return fail(why, "granted: bad core");
            *out = m;
            return true;
        }
        case MsgType::kRequestAck: {
            RequestAck m;
            for (auto& n : m.perPriority)
                if (!r.get(&n)) return fail(why, "request-ack: wrong payload size");
            if (!r.get(&m.minCores) || !r.get(&m.maxCores) || !r.get(&m.clamped) || !r.done())
                return fail(why, "request-ack: wrong payload size");
            *out = m;
            return true;
        }
        case MsgType::kError: {
            ErrorReply m;
            uint32_t code;
            uint16_t length;
            if (!r.get(&code) || !r.get(&length) || length > kMaxErrorText ||
                !r.string(length, &m.text) || !r.done())
                return fail(why, "error: bad payload");
            m.code = static_cast<ErrorCode>(code);
            *out = m;
            return true;
        }
        case MsgType::kStatusReply: {
            StatusReply m;
            if (!parseStatusReply(r, &m, why)) return false;
            *out = std::move(m);
            return true;
        }
        default:
            return fail(why, std::string("not an arbiter message: ") + typeName(type));
    }
}

// Writes the frame header with a placeholder length, returning the offset to patch.
size_t beginFrame(MsgType type, std::vector<uint8_t>* out) {
    size_t start = out->size();
    Writer w(out);
    w.put<uint32_t>(0);
    w.put<uint16_t>(static_cast<uint16_t>(type));
    w.put<uint16_t>(0);
    return start;
}

// Patches the payload length once the payload is written.
void endFrame(size_t start, std::vector<uint8_t>* out) {
    uint32_t length = static_cast<uint32_t>(out->size() - start - kHeaderSize);
    std::memcpy(out->data() + start, &length, sizeof(length));
}

void putCores(Writer& w, const std::vector<int32_t>& cores) {
    w.put<uint32_t>(static_cast<uint32_t>(cores.size()));
    for (auto c : cores) w.put(c);
}

struct ClientEncoder {
    Writer w;
    void operator()(const Hello& m) {
        w.put(kMagic), w.put(m.major), w.put(m.minor), w.put(static_cast<uint32_t>(m.role));
        w.put(m.flags), w.put<uint32_t>(0);
    }
    void operator()(const Attach& m) {
        w.put(kMagic), w.put(m.major), w.put(m.minor), w.put(m.sessionId), w.put(m.tid);
        w.put(m.claimedCore);
    }
    void operator()(const SetRequest& m) {
        for (auto n : m.perPriority) w.put(n);
        w.put(m.minCores), w.put(m.maxCores);
    }
    void operator()(const ReleaseDone& m) {
        w.put(m.core), w.put<uint32_t>(0), w.put(m.generation);
    }
    void operator()(const Block&) {}
    void operator()(const Goodbye&) {}
    void operator()(const StatusQuery&) {}
};

struct ServerEncoder {
    Writer w;
    void operator()(const HelloReply& m) {
        w.put(m.major), w.put(m.minor), w.put(m.pageSize), w.put(m.sessionId), w.put(m.epoch);
    }
    void operator()(const AttachReply& m) {
        w.put(static_cast<uint32_t>(m.status)), w.put(m.core), w.put(m.generation);
    }
    void operator()(const Granted& m) { w.put(m.core), w.put<uint32_t>(0), w.put(m.generation); }
    void operator()(const RequestAck& m) {
        for (auto n : m.perPriority) w.put(n);
        w.put(m.minCores), w.put(m.maxCores), w.put(m.clamped);
    }
    void operator()(const ErrorReply& m) {
        std::string text = m.text.substr(0, kMaxErrorText);
        w.put(static_cast<uint32_t>(m.code)), w.put(static_cast<uint16_t>(text.size()));
        w.bytes(text);
    }
    void operator()(const StatusReply& m) {
        w.put(m.epoch);
        putCores(w, m.managed);
        w.put(static_cast<uint32_t>(m.processes.size()));
        for (const auto& p : m.processes) {
            w.put(p.pid), w.put(p.uid);
            for (auto n : p.requested) w.put(n);
            w.put(p.minCores), w.put(p.maxCores), w.put(p.carriers);
            putCores(w, p.granted);
            putCores(w, p.pendingReleases);
            std::string command = p.command.substr(0, kMaxCommandLength);
            w.put(static_cast<uint16_t>(command.size()));
            w.bytes(command);
        }
    }
};

template <typename Variant>
MsgType typeOf(const Variant& v);

template <>
MsgType typeOf(const ClientMessage& v) {
    static constexpr MsgType kTypes[] = {
        MsgType::kHello,       MsgType::kAttach,  MsgType::kSetRequest, MsgType::kBlock,
        MsgType::kReleaseDone, MsgType::kGoodbye, MsgType::kStatusQuery};
    return kTypes[v.index()];
}

template <>
MsgType typeOf(const ServerMessage& v) {
    static constexpr MsgType kTypes[] = {MsgType::kHelloReply, MsgType::kAttachReply,
                                         MsgType::kGranted,    MsgType::kRequestAck,
                                         MsgType::kError,      MsgType::kStatusReply};
    return kTypes[v.index()];
}

}  // namespace

const char* typeName(MsgType type) {
    switch (type) {
        case MsgType::kHello:
            return "hello";
        case MsgType::kAttach:
            return "attach";
        case MsgType::kSetRequest:
            return "set-request";
        case MsgType::kBlock:
            return "block";
        case MsgType::kReleaseDone:
            return "release-done";
        case MsgType::kGoodbye:
            return "goodbye";
        case MsgType::kStatusQuery:
            return "status-query";
        case MsgType::kHelloReply:
            return "hello-reply";
        case MsgType::kAttachReply:
            return "attach-reply";
        case MsgType::kGranted:
            return "granted";
        case MsgType::kRequestAck:
            return "request-ack";
        case MsgType::kError:
            return "error";
        case MsgType::kStatusReply:
            return "status-reply";
    }
    return "unknown";
}

DecodeStatus splitFrame(std::span<const uint8_t> bytes, uint32_t maxPayload, Frame* frame,
                        size_t* consumed, std::string* why) {
    if (bytes.size() < kHeaderSize) return DecodeStatus::kIncomplete;
    uint32_t length;
    uint16_t type, flags;
    std::memcpy(&length, bytes.data(), 4);
    std::memcpy(&type, bytes.data() + 4, 2);
    std::memcpy(&flags, bytes.data() + 6, 2);
    if (!knownType(type)) {
        fail(why, "unknown message type " + std::to_string(type));
        return DecodeStatus::kMalformed;
    }
    if (flags != 0) {
        fail(why, "frame flags not zero");
        return DecodeStatus::kMalformed;
    }
    if (length > maxPayload) {
        fail(why, "frame too long (" + std::to_string(length) + " bytes)");
        return DecodeStatus::kMalformed;
    }
    if (bytes.size() - kHeaderSize < length) return DecodeStatus::kIncomplete;
    frame->type = static_cast<MsgType>(type);
    frame->payload = bytes.subspan(kHeaderSize, length);
    *consumed = kHeaderSize + length;
    return DecodeStatus::kOk;
}

bool parseClientMessage(const Frame& frame, ClientMessage* out, std::string* why) {
    Reader r(frame.payload);
    switch (frame.type) {
        case MsgType::kHello: {
            Hello m;
            if (!parseHello(r, &m, why)) return false;
            *out = m;
            return true;
        }
        case MsgType::kAttach: {
            Attach m;
            if (!parseAttach(r, &m, why)) return false;
            *out = m;
            return true;
        }
        case MsgType::kSetRequest: {
            SetRequest m;
            if (!parseSetRequest(r, &m, why)) return false;
            *out = m;
            return true;
        }
        case MsgType::kBlock:
            *out = Block{};
            return parseEmpty(r, &std::get<Block>(*out), why);
        case MsgType::kReleaseDone: {
            ReleaseDone m;
            if (!parseReleaseDone(r, &m, why)) return false;
            *out = m;
            return true;
        }
        case MsgType::kGoodbye:
            *out = Goodbye{};
            return parseEmpty(r, &std::get<Goodbye>(*out), why);
        case MsgType::kStatusQuery:
            *out = StatusQuery{};
            return parseEmpty(r, &std::get<StatusQuery>(*out), why);
        default:
            return fail(why, std::string("not a client message: ") + typeName(frame.type));
    }
}

bool parseServerMessage(const Frame& frame, ServerMessage* out, std::string* why) {
    Reader r(frame.payload);
    return parseServer(frame.type, r, out, why);
}

DecodeStatus decodeClientMessage(std::span<const uint8_t> bytes, ClientMessage* out,
                                 size_t* consumed, std::string* why) {
    Frame frame;
    DecodeStatus s = splitFrame(bytes, kMaxClientPayload, &frame, consumed, why);
    if (s != DecodeStatus::kOk) return s;
    return parseClientMessage(frame, out, why) ? DecodeStatus::kOk : DecodeStatus::kMalformed;
}

DecodeStatus decodeServerMessage(std::span<const uint8_t> bytes, ServerMessage* out,
                                 size_t* consumed, std::string* why) {
    Frame frame;
    DecodeStatus s = splitFrame(bytes, kMaxServerPayload, &frame, consumed, why);
    if (s != DecodeStatus::kOk) return s;
    return parseServerMessage(frame, out, why) ? DecodeStatus::kOk : DecodeStatus::kMalformed;
}

void encode(const ClientMessage& message, std::vector<uint8_t>* out) {
    size_t start = beginFrame(typeOf(message), out);
    std::visit(ClientEncoder{Writer(out)}, message);
    endFrame(start, out);
}

void encode(const ServerMessage& message, std::vector<uint8_t>* out) {
    size_t start = beginFrame(typeOf(message), out);
    std::visit(ServerEncoder{Writer(out)}, message);
    endFrame(start, out);
}

}  // namespace arbproto

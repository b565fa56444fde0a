// Blocking socket helpers shared by the client library and arbctl: connect, send a whole frame,
// read one arbiter message (with an optional passed file descriptor). The daemon has its own
// non-blocking I/O and does not use these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arbproto/codec.h"

namespace arbproto {

// Connects a SOCK_STREAM|SOCK_CLOEXEC Unix socket to `path`; returns the fd or -1 with `error` set.
int connectUnix(const std::string& path, std::string* error);

// Sends every byte (MSG_NOSIGNAL: a dead peer is an error, not a SIGPIPE).
bool sendAll(int fd, const std::vector<uint8_t>& bytes, std::string* error);

// Encodes and sends one client message.
bool sendMessage(int fd, const ClientMessage& message, std::string* error);

// Reads arbiter messages from one blocking socket. Not thread-safe: one reader per stream.
class ServerStream {
  public:
    enum class Result { kMessage, kClosed, kError };
    explicit ServerStream(int fd) : fd_(fd) {}
    // Reads the next message. A descriptor passed with SCM_RIGHTS is stored in *passedFd (or closed
    // when passedFd is null); extra descriptors are always closed.
    Result next(ServerMessage* message, std::string* error, int* passedFd = nullptr);

  private:
    int fd_;
    std::vector<uint8_t> buffer_;
};

}  // namespace arbproto

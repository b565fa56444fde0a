#include "arbproto/io.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace arbproto {
namespace {

std::string errnoText(const char* what) {
    return std::string(what) + ": " + strerror(errno);
}

// Keeps the first descriptor of an SCM_RIGHTS message (if the caller wants one), closes the rest,
// so a misbehaving peer can never make us leak descriptors.
void takeDescriptors(msghdr* msg, int* passedFd) {
    for (cmsghdr* c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (passedFd && *passedFd < 0)
                *passedFd = fd;
            else
                close(fd);
        }
    }
}

}  // namespace

int connectUnix(const std::string& path, std::string* error) {
    sockaddr_un addr{};
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        if (error) *error = "socket path empty or too long";
        return -1;
    }
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        if (error) *error = errnoText("socket");
        return -1;
    }
    while (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        if (errno == EINTR) continue;
        if (error) *error = strerror(errno);
        close(fd);
        return -1;
    }
    return fd;
}

bool sendAll(int fd, const std::vector<uint8_t>& bytes, std::string* error) {
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (error) *error = errnoText("send");
            return false;
        }
        done += static_cast<size_t>(n);
    }
    return true;
}

bool sendMessage(int fd, const ClientMessage& message, std::string* error) {
    std::vector<uint8_t> bytes;
    encode(message, &bytes);
    return sendAll(fd, bytes, error);
}

ServerStream::Result ServerStream::next(ServerMessage* message, std::string* error, int* passedFd) {
    for (;;) {
        size_t consumed = 0;
        std::string why;
        DecodeStatus s = decodeServerMessage(buffer_, message, &consumed, &why);
        if (s == DecodeStatus::kOk) {
            buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(consumed));
            return Result::kMessage;
        }
        if (s == DecodeStatus::kMalformed) {
            if (error) *error = "malformed message from arbiter: " + why;
            return Result::kError;
        }
        uint8_t chunk[4096];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
        iovec iov{chunk, sizeof(chunk)};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
        ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            if (error) *error = errnoText("recv");
            return Result::kError;
        }
        takeDescriptors(&msg, passedFd);
        if (n == 0) {
            if (error) *error = "arbiter closed the connection";
            return Result::kClosed;
        }
        buffer_.insert(buffer_.end(), chunk, chunk + n);
    }
}

}  // namespace arbproto

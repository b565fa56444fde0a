// arbctl: shows what the core arbiter is doing. `arbctl --socket PATH status [--json]`,
// `arbctl --socket PATH watch [--interval MS] [--count N]`.
#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "arbcli/parse.h"
#include "arbproto/io.h"
#include "arbproto/messages.h"
#include "format.h"

namespace {

// One observer session: hello, then one status query per call.
class Observer {
  public:
    ~Observer() {
        if (fd_ >= 0) close(fd_);
    }
    bool open(const std::string& socket, std::string* error) {
        fd_ = arbproto::connectUnix(socket, error);
        if (fd_ < 0) {
            *error = "cannot reach core arbiter at " + socket + " (" + *error + ")";
            return false;
        }
        stream_ = std::make_unique<arbproto::ServerStream>(fd_);
        arbproto::Hello hello;
        hello.role = arbproto::Role::kObserver;
        arbproto::ServerMessage reply;
        return arbproto::sendMessage(fd_, hello, error) &&
               expect<arbproto::HelloReply>(&reply, error);
    }
    bool query(arbproto::StatusReply* status, std::string* error) {
        arbproto::ServerMessage reply;
        if (!arbproto::sendMessage(fd_, arbproto::StatusQuery{}, error) ||
            !expect<arbproto::StatusReply>(&reply, error))
            return false;
        *status = std::get<arbproto::StatusReply>(std::move(reply));
        return true;
    }

  private:
    template <typename T>
    bool expect(arbproto::ServerMessage* reply, std::string* error) {
        if (stream_->next(reply, error) != arbproto::ServerStream::Result::kMessage) return false;
        if (auto* e = std::get_if<arbproto::ErrorReply>(reply)) {
            *error = "arbiter error: " + e->text;
            return false;
        }
        if (!std::holds_alternative<T>(*reply)) {
            *error = "unexpected reply from the arbiter";
            return false;
        }
        return true;
    }
    int fd_ = -1;
    std::unique_ptr<arbproto::ServerStream> stream_;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"arbctl: shows the core arbiter's processes, requests and grants", "arbctl"};
    std::string socket = arbproto::kDefaultSocketPath;
    bool json = false;
    int intervalMs = 1000, count = 0;
    app.add_option("--socket", socket, "The arbiter's Unix socket")->capture_default_str();
    app.require_subcommand(1);
    auto* status = app.add_subcommand("status", "Print every process, its request and its cores");
    status->add_flag("--json", json, "Print JSON instead of a table");
    auto* watch = app.add_subcommand("watch", "Refresh the status table until interrupted");
    watch->add_option("--interval", intervalMs, "Milliseconds between refreshes")
        ->check(CLI::Range(10, 3600000))
        ->capture_default_str();
    watch->add_option("--count", count, "Stop after N refreshes (0: never)")
        ->check(CLI::NonNegativeNumber);
    if (std::optional<int> status = arbcli::parse(app, argc, argv, "arbctl")) return *status;
    Observer observer;
    std::string error;
    if (!observer.open(socket, &error)) {
        std::cerr << "arbctl: " << error << "\n";
        return 1;
    }
    for (int n = 0;; n++) {
        arbproto::StatusReply reply;
        if (!observer.query(&reply, &error)) {
            std::cerr << "arbctl: " << error << "\n";
            return 1;
        }
        if (status->parsed()) {
            std::cout << (json ? arbctl::toJson(reply) + "\n" : arbctl::toTable(reply));
            return 0;
        }
        // Clear the screen when attached to a terminal, like watch(1).
        if (isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
        std::cout << arbctl::toTable(reply) << std::flush;
        if (count && n + 1 >= count) return 0;
        poll(nullptr, 0, intervalMs);
    }
}

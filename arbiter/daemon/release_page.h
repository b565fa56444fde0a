// The arbiter's side of one process's release page (arbproto::SharedPage): a sealed memfd mapped
// read-write here and passed read-only to the client, so no file is left behind and the client can
// never write to it.
#pragma once

#include <memory>
#include <string>

#include "arbproto/shared_page.h"
#include "sys.h"

namespace arbd {

class ReleasePage {
  public:
    // Creates the page; *fdToSend is a descriptor that only allows read-only mappings (caller sends
    // and closes it).
    static std::unique_ptr<ReleasePage> create(Sys& sys, uint64_t epoch, int* fdToSend,
                                               std::string* error);
    ~ReleasePage();
    // Relaxed flag stores: the client only needs to see the flag eventually; the socket orders
    // the rest. Setting one also bumps and wakes releaseSeq, so a client sleeping on it reacts at
    // once (its fast release) instead of at its dispatcher's next pass.
    void set(int core, bool on);
    bool isSet(int core) const { return page_->release[core].load(std::memory_order_relaxed) != 0; }

    ReleasePage(const ReleasePage&) = delete;
    ReleasePage& operator=(const ReleasePage&) = delete;

  private:
    explicit ReleasePage(arbproto::SharedPage* page) : page_(page) {}
    arbproto::SharedPage* page_;
};

}  // namespace arbd

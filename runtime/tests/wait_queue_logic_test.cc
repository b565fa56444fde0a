// Pure logic of the wait queue every primitive is built on (FIFO order, removal from any position),
// exercised without a running runtime so it can run under ASan/UBSan.
#include <gtest/gtest.h>

#include <vector>

#include "sync/wait_queue.h"

namespace {

using arbrt::detail::Waiter;
using arbrt::detail::WaitQueue;

// The queue's contents, front to back, checked against its count and back links.
std::vector<Waiter*> contents(const WaitQueue& q) {
    std::vector<Waiter*> out;
    Waiter* prev = nullptr;
    for (Waiter* w = q.head; w; w = w->next) {
        EXPECT_EQ(w->prev, prev);
        out.push_back(w);
        prev = w;
    }
    EXPECT_EQ(q.tail, prev);
    EXPECT_EQ(q.count, out.size());
    return out;
}

TEST(WaitQueue, PopFront_IsFifo) {
    WaitQueue q;
    Waiter w[4];
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.popFront(), nullptr);
    for (Waiter& x : w) q.pushBack(&x);
    EXPECT_EQ(contents(q), (std::vector<Waiter*>{&w[0], &w[1], &w[2], &w[3]}));
    for (Waiter& x : w) EXPECT_EQ(q.popFront(), &x);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.count, 0u);
    EXPECT_EQ(q.tail, nullptr);
}

TEST(WaitQueue, Remove_FromAnyPosition) {
    WaitQueue q;
    Waiter w[5];
    for (Waiter& x : w) q.pushBack(&x);
    q.remove(&w[2]);  // middle
    EXPECT_EQ(contents(q), (std::vector<Waiter*>{&w[0], &w[1], &w[3], &w[4]}));
    q.remove(&w[0]);  // head
    EXPECT_EQ(contents(q), (std::vector<Waiter*>{&w[1], &w[3], &w[4]}));
    q.remove(&w[4]);  // tail
    EXPECT_EQ(contents(q), (std::vector<Waiter*>{&w[1], &w[3]}));
    q.pushBack(&w[0]);  // a removed waiter can queue again
    EXPECT_EQ(contents(q), (std::vector<Waiter*>{&w[1], &w[3], &w[0]}));
    q.remove(&w[1]);
    q.remove(&w[3]);
    q.remove(&w[0]);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.tail, nullptr);
    EXPECT_EQ(q.count, 0u);
}

TEST(WaitQueue, Remove_OnlyElementEmptiesQueue) {
    WaitQueue q;
    Waiter w;
    q.pushBack(&w);
    q.remove(&w);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.head, nullptr);
    EXPECT_EQ(q.tail, nullptr);
    EXPECT_EQ(w.next, nullptr);
    EXPECT_EQ(w.prev, nullptr);
}

}  // namespace

#include <arbrt/arbrt.h>
#include <gtest/gtest.h>

TEST(Runtime, StartCreateJoinStop) {
    arbrt::RuntimeOptions o;
    o.numCores = 2;
    ASSERT_FALSE(arbrt::start(o).has_value());
    int x = 0;
    auto t = arbrt::createThread([&] { x = 42; });
    EXPECT_EQ(arbrt::join(t), 0);
    EXPECT_EQ(x, 42);
    EXPECT_TRUE(arbrt::stop());
}

// The arbiter request computed from thread classes (core_request.h): a pure function, tested on
// tables of inputs and the request each must give.
#include <gtest/gtest.h>

#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "arbiter/core_request.h"

namespace {

using arbrt::detail::computeCoreRequest;
using arbrt::detail::CoreRequest;
using arbrt::detail::RequestInputs;

// A request from (level, cores) pairs; unlisted levels ask for nothing.
CoreRequest request(std::initializer_list<std::pair<int, uint32_t>> levels, uint32_t minCores,
                    uint32_t maxCores) {
    CoreRequest r;
    for (const auto& [level, cores] : levels) r.perPriority[size_t(level)] = cores;
    r.minCores = minCores;
    r.maxCores = maxCores;
    return r;
}

std::string describe(const CoreRequest& r) {
    std::ostringstream out;
    out << "levels";
    for (uint32_t cores : r.perPriority) out << ' ' << cores;
    out << " min " << r.minCores << " max " << r.maxCores;
    return out.str();
}

struct Row {
    const char* what;
    RequestInputs in;
    CoreRequest expected;
};

// Inputs: priority, minCores, maxCores, poolDemand, exclusive, normal, batch threads.
RequestInputs inputs(int priority, uint32_t minCores, uint32_t maxCores, uint32_t pool,
                     uint32_t exclusive, uint32_t normal, uint32_t batch) {
    return RequestInputs{priority, minCores, maxCores, pool, exclusive, normal, batch};
}

void check(const std::vector<Row>& rows) {
    for (const Row& row : rows) {
        const CoreRequest got = computeCoreRequest(row.in);
        EXPECT_EQ(got, row.expected)
            << row.what << ": got " << describe(got) << ", expected " << describe(row.expected);
    }
}

TEST(CoreRequest, NoClasses_EveryCoreAtItsLevel) {
    check({
        {"one thread", inputs(3, 0, 4, 4, 0, 1, 0), request({{3, 4}}, 0, 4)},
        {"many threads", inputs(3, 1, 4, 4, 0, 100, 0), request({{3, 4}}, 1, 4)},
        {"no live thread yet", inputs(5, 1, 2, 2, 0, 0, 0), request({{5, 2}}, 1, 2)},
        {"highest level", inputs(0, 2, 8, 8, 0, 3, 0), request({{0, 8}}, 2, 8)},
        {"lowest level", inputs(7, 0, 8, 8, 0, 3, 0), request({{7, 8}}, 0, 8)},
        {"smaller pool demand", inputs(3, 0, 8, 3, 0, 9, 0), request({{3, 3}}, 0, 8)},
    });
}

TEST(CoreRequest, Exclusive_OneCoreEachBesideThePool) {
    check({
        {"pool asks for all: the total stays at max", inputs(3, 0, 4, 4, 1, 2, 0),
         request({{3, 4}}, 0, 4)},
        {"an estimate of 2 plus one exclusive", inputs(3, 0, 8, 2, 1, 5, 0),
         request({{3, 3}}, 0, 8)},
        {"an estimate of 2 plus three exclusive", inputs(3, 0, 8, 2, 3, 5, 0),
         request({{3, 5}}, 0, 8)},
        {"one core always stays shared", inputs(3, 0, 4, 4, 9, 1, 0), request({{3, 4}}, 0, 4)},
        {"a single core is the pool's", inputs(3, 0, 1, 1, 2, 0, 0), request({{3, 1}}, 0, 1)},
        {"the pool shrinks to fit", inputs(2, 0, 4, 3, 2, 1, 0), request({{2, 4}}, 0, 4)},
    });
}

TEST(CoreRequest, Batch_CoresOnlyBatchNeedsOneLevelLower) {
    check({
        {"main plus three batch workers", inputs(3, 0, 4, 4, 0, 1, 3),
         request({{3, 1}, {4, 3}}, 0, 4)},
        {"more batch threads than spare cores", inputs(3, 0, 4, 4, 0, 1, 10),
         request({{3, 1}, {4, 3}}, 0, 4)},
        {"fewer batch threads than spare cores", inputs(3, 0, 8, 8, 0, 2, 3),
         request({{3, 2}, {4, 3}}, 0, 8)},
        {"normal threads fill the pool: batch needs nothing of its own",
         inputs(3, 0, 4, 4, 0, 6, 2), request({{3, 4}}, 0, 4)},
        {"every thread batch (--default-class batch)", inputs(3, 0, 4, 4, 0, 0, 5),
         request({{4, 4}}, 0, 4)},
        {"the lowest level holds both", inputs(7, 0, 4, 4, 0, 1, 3), request({{7, 4}}, 0, 4)},
        {"level 6: batch at 7", inputs(6, 0, 4, 4, 0, 1, 3), request({{6, 1}, {7, 3}}, 0, 4)},
        {"within the estimate", inputs(3, 0, 8, 3, 0, 1, 5), request({{3, 1}, {4, 2}}, 0, 8)},
    });
}

TEST(CoreRequest, ExclusiveAndBatch_Together) {
    check({
        {"one exclusive, main, two batch", inputs(3, 0, 4, 4, 1, 1, 2),
         request({{3, 2}, {4, 2}}, 0, 4)},
        {"exclusive takes room from batch first", inputs(3, 0, 4, 4, 2, 1, 5),
         request({{3, 3}, {4, 1}}, 0, 4)},
    });
}

TEST(CoreRequest, Limits_ClampedAndPassedThrough) {
    check({
        {"minCores passes through", inputs(3, 2, 4, 4, 0, 1, 0), request({{3, 4}}, 2, 4)},
        {"minCores capped at maxCores", inputs(3, 9, 4, 4, 0, 1, 0), request({{3, 4}}, 4, 4)},
        {"maxCores 0 counts as 1", inputs(3, 0, 0, 0, 0, 1, 0), request({{3, 1}}, 0, 1)},
        {"pool demand 0 counts as 1", inputs(3, 0, 4, 0, 0, 1, 0), request({{3, 1}}, 0, 4)},
        {"priority above 7 clamped", inputs(12, 0, 2, 2, 0, 1, 1), request({{7, 2}}, 0, 2)},
        {"negative priority clamped", inputs(-1, 0, 2, 2, 0, 1, 1),
         request({{0, 1}, {1, 1}}, 0, 2)},
    });
}

}  // namespace

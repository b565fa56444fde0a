// The failure path of ARB_ASSERT (arbrt/embed/invariant.h).
#include "arbrt/embed/invariant.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace arbrt::detail {
namespace {

// Appends `text` to buf[*used..size) (truncating), without libc formatting.
void append(char* buf, size_t size, size_t* used, const char* text) {
    const size_t n = strnlen(text, size - *used);
    memcpy(buf + *used, text, n);
    *used += n;
}

// Decimal digits of a non-negative line number, on the stack.
void appendNumber(char* buf, size_t size, size_t* used, int value) {
    char digits[16];
    int n = 0;
    unsigned v = value < 0 ? 0u : static_cast<unsigned>(value);
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0 && n < 16);
    while (n > 0 && *used < size) buf[(*used)++] = digits[--n];
}

}  // namespace

// One buffer on the stack and one write(2): no allocation, no stdio lock, async-signal-safe.
void invariantFailed(const char* file, int line, const char* condition, const char* why) noexcept {
    char buf[512];
    size_t used = 0;
    const size_t room = sizeof buf - 1;  // keep one byte for the newline
    append(buf, room, &used, "arbrun: invariant broken at ");
    append(buf, room, &used, file);
    append(buf, room, &used, ":");
    appendNumber(buf, room, &used, line);
    append(buf, room, &used, ": ");
    append(buf, room, &used, condition);
    append(buf, room, &used, " (");
    append(buf, room, &used, why);
    append(buf, room, &used, ")");
    buf[used++] = '\n';
    [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, buf, used);
    abort();
}

}  // namespace arbrt::detail

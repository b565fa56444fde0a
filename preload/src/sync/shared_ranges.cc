#include "sync/shared_ranges.h"

namespace arbrun {
namespace {

// The value of a lower-case hex digit (what the kernel prints), or -1.
int hexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

void MapsParser::feed(const char* text, size_t size) {
    for (size_t i = 0; i < size; ++i) consume(text[i]);
}

void MapsParser::finish() {
    if (haveRun_) emit_(context_, run_);
    haveRun_ = false;
    endLine();
}

// One character of "begin-end perms offset dev inode path\n"; only the first two fields matter.
void MapsParser::consume(char c) {
    if (c == '\n') {
        endLine();
        return;
    }
    switch (state_) {
        case State::start:
        case State::end: {
            const int d = hexValue(c);
            uintptr_t& field = state_ == State::start ? begin_ : end_;
            if (d >= 0) {
                field = field * 16 + uintptr_t(d);
                digits_ = true;
            } else if (digits_ && state_ == State::start && c == '-') {
                state_ = State::end;
                digits_ = false;
            } else if (digits_ && state_ == State::end && c == ' ') {
                state_ = State::perms;
                permIndex_ = 0;
            } else {
                state_ = State::skip;  // not a mapping line
            }
            break;
        }
        case State::perms:
            if (permIndex_ == 3) {  // rwxs / rwxp: the fourth flag
                if (c == 's' || c == 'p') mapping(begin_, end_, c == 's');
                state_ = State::skip;
            }
            ++permIndex_;
            break;
        case State::skip:
            break;
    }
}

void MapsParser::endLine() {
    state_ = State::start;
    permIndex_ = 0;
    digits_ = false;
    begin_ = end_ = 0;
}

// Extends the current run of shared mappings or reports it when this mapping does not continue it.
void MapsParser::mapping(uintptr_t begin, uintptr_t end, bool shared) {
    if (end <= begin) return;
    if (haveRun_ && (!shared || begin != run_.end)) {
        emit_(context_, run_);
        haveRun_ = false;
    }
    if (!shared) return;
    if (haveRun_) {
        run_.end = end;
    } else {
        run_ = AddressRange{begin, end};
        haveRun_ = true;
    }
}

}  // namespace arbrun

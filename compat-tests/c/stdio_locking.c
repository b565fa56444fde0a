// stdio_locking: glibc's streams skip their locks while the process has one thread and lock once
// it has created another (glibc 2.27+: _IO_FLAGS2_NEED_LOCK, 128 in FILE::_flags2), as natively;
// then threads writing one stream at once lose nothing. Under arbrun the library's own kernel
// threads must not count as the program's: a single-threaded program's getc and putc would pay
// for a lock each (ten times their cost).
#include "../common/compat.h"

#define NEED_LOCK 128
#define WRITERS 4
#define PER_WRITER 200000

static FILE* shared;

static void* writer(void* arg) {
    const int c = 'a' + (int)(intptr_t)arg;
    for (int i = 0; i < PER_WRITER; ++i) putc(c, shared);
    return NULL;
}

int main(void) {
    compat_start("stdio_locking");
    FILE* before = fopen("/dev/null", "w");
    CHECK(before != NULL, "fopen failed");
    CHECK(!(stdin->_flags2 & NEED_LOCK), "stdin locks while the program has one thread");
    CHECK(!(stdout->_flags2 & NEED_LOCK), "stdout locks while the program has one thread");
    CHECK(!(before->_flags2 & NEED_LOCK), "a stream opened by main() locks");

    shared = tmpfile();
    CHECK(shared != NULL, "tmpfile failed");
    pthread_t threads[WRITERS];
    for (int i = 0; i < WRITERS; ++i) threads[i] = compat_spawn(writer, (void*)(intptr_t)i);
    CHECK(stdin->_flags2 & NEED_LOCK, "stdin does not lock after pthread_create");
    CHECK(before->_flags2 & NEED_LOCK, "an older stream does not lock after pthread_create");
    CHECK(shared->_flags2 & NEED_LOCK, "the shared stream does not lock after pthread_create");
    FILE* after = fopen("/dev/null", "w");
    CHECK(after != NULL && (after->_flags2 & NEED_LOCK), "a stream opened later does not lock");
    for (int i = 0; i < WRITERS; ++i) compat_join(threads[i]);

    // Every character of every writer arrived: none was lost to an unlocked race on the buffer.
    rewind(shared);
    long counts[WRITERS] = {0};
    int c;
    while ((c = getc(shared)) != EOF) {
        CHECK(c >= 'a' && c < 'a' + WRITERS, "a stray byte %d in the stream", c);
        ++counts[c - 'a'];
    }
    for (int i = 0; i < WRITERS; ++i) CHECK_EQ(counts[i], PER_WRITER);
    fclose(shared);
    fclose(before);
    fclose(after);
    return compat_ok();
}

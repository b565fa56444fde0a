// Detection of thread runtimes that must run natively (own_runtime.h).
#include "process/own_runtime.h"

#include <errno.h>  // program_invocation_name

#include <atomic>

#include "arbexe/elf_facts.h"
#include "libc/shim.h"

namespace arbrun {

// The program as the user named it (argv[0]): glibc sets it before any library's constructor.
bool ownThreadRuntime(std::string* why) {
    const std::string program = program_invocation_name ? program_invocation_name : "the program";
    const char* object = arbexe::loadedGoObject();
    if (object && *object != '\0') {
        *why = program + " loads a Go library, " + object +
               " (Go's runtime schedules its own threads)";
        return true;
    }
    arbexe::ElfFacts facts;
    std::string error;
    if (object || (arbexe::inspectFile("/proc/self/exe", &facts, &error) && facts.go)) {
        *why = program + " is a Go program (its runtime schedules its own threads)";
        return true;
    }
    return false;
}

// In runtime mode no Go object was loaded at start-up (ownThreadRuntime() said no), so any found
// now came with a dlopen. Relaxed: the flag only keeps the line from repeating.
void warnIfGoLibraryLoaded() {
    static std::atomic<bool> reported{false};
    if (reported.load(std::memory_order_relaxed)) return;
    const char* object = arbexe::loadedGoObject();
    if (!object || reported.exchange(true, std::memory_order_relaxed)) return;
    logWarning(
        "%s loaded a Go library, %s, with dlopen: Go's runtime schedules its own threads "
        "and crashes on user threads; run this program without arbrun",
        program_invocation_name ? program_invocation_name : "the program",
        *object ? object : "(unnamed)");
}

}  // namespace arbrun

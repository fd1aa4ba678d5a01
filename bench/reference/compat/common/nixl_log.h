// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
//
// Stands in for NIXL's common/nixl_log.h when bench/reference.sh compiles a NIXL plugin outside
// NIXL's meson tree. NIXL's header routes its macros to abseil's logging, whose library the
// NIXL wheel does not export to plugins; this one writes errors and warnings to stderr and
// drops the rest, so the plugin builds with nothing but NIXL's API headers and libdaos.
// Written for this project: only the macro names are NIXL's (they are the plugin's interface).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

namespace nixl_daos_bench {

// One log line: collects what is streamed into it and prints it when the statement ends.
class LogLine {
public:
    LogLine(const char *level, bool shown, bool fatal = false)
        : level_(level), shown_(shown), fatal_(fatal) {}
    LogLine(const LogLine &) = delete;
    ~LogLine() {
        if (shown_) {
            // One write per line, so that lines of the plugin's many threads do not interleave.
            std::ostringstream line;
            line << "[reference plugin " << level_ << "] " << text_.str();
            if (errno_ != 0) line << ": " << std::strerror(errno_);
            line << '\n';
            std::cerr << line.str() << std::flush;
        }
        if (fatal_) std::abort();
    }
    template <typename T> LogLine &operator<<(const T &v) {
        if (shown_) text_ << v;
        return *this;
    }
    // The P variants (NIXL_PERROR, ...) append strerror(errno) as it was when the line began.
    LogLine &WithPerror() {
        errno_ = errno;
        return *this;
    }

private:
    const char *level_;
    bool shown_;
    bool fatal_;
    int errno_ = 0;
    std::ostringstream text_;
};

} // namespace nixl_daos_bench

#define NIXL_FATAL ::nixl_daos_bench::LogLine("FATAL", true, true)
#define NIXL_PFATAL NIXL_FATAL.WithPerror()
#define NIXL_ERROR ::nixl_daos_bench::LogLine("ERROR", true)
#define NIXL_PERROR NIXL_ERROR.WithPerror()
#define NIXL_ERROR_FUNC NIXL_ERROR << __FUNCTION__ << ": "
#define NIXL_WARN ::nixl_daos_bench::LogLine("WARN", true)
#define NIXL_PWARN NIXL_WARN.WithPerror()
#define NIXL_INFO ::nixl_daos_bench::LogLine("INFO", false)
#define NIXL_PINFO NIXL_INFO.WithPerror()
#define NIXL_DEBUG ::nixl_daos_bench::LogLine("DEBUG", false)
#define NIXL_PDEBUG NIXL_DEBUG.WithPerror()
#define NIXL_TRACE ::nixl_daos_bench::LogLine("TRACE", false)
#define NIXL_PTRACE NIXL_TRACE.WithPerror()
// The empty branch keeps a caller's own `else` from binding to this `if`.
#define NIXL_ASSERT_ALWAYS(condition) \
    if (condition) {                  \
    } else                            \
        NIXL_FATAL << "assertion failed: " #condition
#define NIXL_ASSERT(condition) NIXL_ASSERT_ALWAYS(condition)

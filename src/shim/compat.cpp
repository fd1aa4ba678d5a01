// SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
// SPDX-License-Identifier: Apache-2.0
// What libstdc++ headers of GCC 11 and later call but libstdc++ releases before them do not
// export, defined here so that the portable build (ci/package.sh) needs no GLIBCXX version above
// 3.4.22 and loads with the libstdc++ of EL8 (GCC 8). The definition stays inside the plugin (the
// cdylib exports only its C entry points), so a newer libstdc++'s own copy is never replaced.
#include <new>

namespace std {
// std::allocator<T>::allocate calls this when asked for more than max_size() elements (GLIBCXX_3.4.29).
[[noreturn]] void __throw_bad_array_new_length() { throw std::bad_array_new_length(); }
} // namespace std

// The DAOS engine as NIXL sees it: a nixlBackendEngine whose every call is forwarded to the Rust
// engine through include/nixl_daos.h.
#ifndef NIXL_DAOS_SHIM_ENGINE_HPP
#define NIXL_DAOS_SHIM_ENGINE_HPP

#include "nixl_abi.hpp"

namespace nixl_daos::shim {

// The plugin table's create_engine/destroy_engine. Never throw. create_engine returns nullptr only
// when init is null or on allocation failure; a failed Rust engine comes back with initErr set
// (NIXL then reports the error and frees the engine through destroy_engine).
abi::EngineBase *create_engine(const abi::InitParams *init) noexcept;
void destroy_engine(abi::EngineBase *engine) noexcept;

// The memory types the engine registers and transfers.
abi::MemList supported_mems();

} // namespace nixl_daos::shim

#endif

// Vendor compiler bridges: each registers itself as a backend (runtime/Backend.h).
#pragma once

namespace friction::vendor {

void registerOrtBackend();

// Registers every bridge built into this binary.
inline void registerVendorBridges() { registerOrtBackend(); }

}  // namespace friction::vendor

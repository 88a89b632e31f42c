// Vendor compiler bridges: each registers itself as a backend (runtime/Backend.h).
#pragma once
#include <string>
#include <vector>

namespace friction::vendor {

// The vendor's own optimization switches that `friction ablate --backend B`
// attributes (empty for backends without them, e.g. friction's own).
std::vector<std::string> vendorSwitches(const std::string& backendSpec);
// `backendSpec` with these switches turned off (e.g. ort?disable=A,B).
std::string withSwitchesOff(const std::string& backendSpec, const std::vector<std::string>& off);

void registerOrtBackend();

// Registers every bridge built into this binary.
inline void registerVendorBridges() { registerOrtBackend(); }

}  // namespace friction::vendor

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

// `backendSpec` with threads=N when it is a bridge that takes a threads option and sets none: how `--threads` /
// a spec's `threads` reach the vendors' own thread pools (OpenMP settings do not cross into their processes).
// Unchanged for threads <= 0, for friction's own backends (OpenMP), and for a spec with its own threads=.
std::string withThreads(const std::string& backendSpec, int threads);

// Switches that are on/off backend options (onednn: postops=on|off) rather
// than an ORT-style disable= list (Switches.cpp); empty for other backends.
// vendorSwitches/withSwitchesOff consult these first.
std::vector<std::string> booleanSwitches(const std::string& backendSpec);
// `backendSpec` with these boolean switches set to off (e.g. onednn?postops=off).
std::string withBooleanSwitchesOff(const std::string& backendSpec, const std::vector<std::string>& off);

void registerOrtBackend();
void registerOpenvinoBackend();  // the Python-worker bridges (PythonBridge.h)
void registerIreeBackend();
void registerTvmBackend();
void registerTensorrtBackend();  // needs a CUDA GPU and TensorRT at run time only
#ifdef FRICTION_HAVE_ONEDNN
void registerOnednnBackend();  // onednn/Backend.cpp, built when CMake finds oneDNN
#endif

// Registers every bridge built into this binary.
inline void registerVendorBridges() {
  registerOrtBackend();
  registerOpenvinoBackend();
  registerIreeBackend();
  registerTvmBackend();
  registerTensorrtBackend();
#ifdef FRICTION_HAVE_ONEDNN
  registerOnednnBackend();
#endif
}

}  // namespace friction::vendor

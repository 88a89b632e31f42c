// The `halide` backend (codegen/halide/HalideSource.h).
#pragma once

namespace friction::codegen::halide {

// Registers "halide" with its options: schedule=none|default|adams2019|
// mullapudi2016|li2018, fusion=inline|root, profile=on|off, dump=on|off (each
// kernel's loop nest on stderr).
void registerHalideBackend();

}  // namespace friction::codegen::halide

// Arena layout the printer turns into pointer arithmetic: the arena size is -1
// (not allocated: no offsets yet) or 0..2^63-1, offsets are non-negative
// multiples of 256, every buffer has a static shape and lies inside the arena.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: sched.program: arena -5 must be -1 (not allocated yet) or a byte count from 0 to 9223372036854775807
sched.program @p() inputs 0 results [] arena -5 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: arena 9223372036854775808 must be -1 (not allocated yet) or a byte count from 0 to 9223372036854775807
sched.program @p() inputs 0 results [] arena 9223372036854775808 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// An unallocated arena with a placed buffer: the interpreter and the printer
// would disagree about where the buffer lives.
// CHECK: sched.program: arena -1 (not allocated) but a sched.buffer has offset 512: give the arena's size (or run sched-allocate)
sched.program @p() inputs 0 results [] arena -1 {
  %t = sched.buffer offset 512 : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.buffer offset -512 must be a non-negative multiple of 256
sched.program @p() inputs 0 results [] arena 1024 {
  %t = sched.buffer offset -512 : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// A buffer past the arena's end.
// CHECK: sched.program: buffer at offset 1024 (16 bytes) overruns the 1024-byte arena
sched.program @p() inputs 0 results [] arena 1024 {
  %t = sched.buffer offset 1024 : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: buffer at offset 0 (16 bytes) overruns the 0-byte arena
sched.program @p() inputs 0 results [] arena 0 {
  %t = sched.buffer offset 0 : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: argument 0 has a dynamic shape (memref<?xf32>); buffers need static shapes
sched.program @p(%a: memref<?xf32>) inputs 1 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// 2^62 x 4 f32 = 2^66 bytes: no byte count the printer can emit.
// CHECK: sched.program: argument 0 (memref<4611686018427387904x4xf32>) holds more than 9223372036854775807 bytes
sched.program @p(%a: memref<4611686018427387904x4xf32>) inputs 1 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: sched.buffer (memref<4611686018427387904x4xf32>) holds more than 9223372036854775807 bytes
sched.program @p() inputs 0 results [] arena -1 {
  %t = sched.buffer : memref<4611686018427387904x4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// The same rules hold in a tile.kernel.
// CHECK: tile.kernel: arena -5 must be -1 (not allocated yet)
tile.kernel @k() inputs 0 results [] arena -5 config {grid = 1 : i64, threads = 128 : i64, smem = 0 : i64} {
}

// -----
// CHECK: {{^//}} {{-----$}}

// The largest arena is fine.
// CHECK-NOT: error
// CHECK: sched.program @big() inputs 0 results [] arena 9223372036854775807
sched.program @big() inputs 0 results [] arena 9223372036854775807 {
}

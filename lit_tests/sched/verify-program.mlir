// sched.program structure: barriers between phases, arena offsets and size,
// argument and result bookkeeping, which ops may appear at the top level.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Two phases with no barrier between them.
// CHECK: sched.program: consecutive phases need a sched.barrier between them
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
  sched.phase {
    sched.compute ins(%t : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Buffers and views between two phases do not separate them either.
// CHECK: sched.program: consecutive phases need a sched.barrier between them
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  %t = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%a : memref<4xf32>) outs(%t : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
  %v = sched.view %t : memref<4xf32> to memref<2x2xf32>
  sched.phase {
    sched.compute ins(%t : memref<4xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: tensor<4xf32>):
      tk.yield %x : tensor<4xf32>
    }
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// Arena offsets are 256-byte aligned.
// CHECK: sched.buffer offset 128 must be a non-negative multiple of 256
sched.program @p() inputs 0 results [] arena 1024 {
  %t = sched.buffer offset 128 : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.buffer offset -256 must be a non-negative multiple of 256
sched.program @p() inputs 0 results [] arena 1024 {
  %t = sched.buffer offset -256 : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// A buffer that ends past the arena: 512 + 16x16x4 bytes > 1024.
// CHECK: sched.program: buffer at offset 512 (1024 bytes) overruns the 1024-byte arena
sched.program @p() inputs 0 results [] arena 1024 {
  %a = sched.buffer offset 0 : memref<4xf32>
  %t = sched.buffer offset 512 : memref<16x16xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// A bf16 buffer is 2 bytes an element: 256 + 2 x 384 = 1024 fits exactly ...
// CHECK-NOT: overruns
// CHECK: sched.program @fits() inputs 0 results [] arena 1024
sched.program @fits() inputs 0 results [] arena 1024 {
  %t = sched.buffer offset 256 : memref<384xbf16>
}

// -----
// CHECK: {{^//}} {{-----$}}

// ... and one element more does not.
// CHECK: sched.program: buffer at offset 256 (770 bytes) overruns the 1024-byte arena
sched.program @p() inputs 0 results [] arena 1024 {
  %t = sched.buffer offset 256 : memref<385xbf16>
}

// -----
// CHECK: {{^//}} {{-----$}}

// Once the arena has a size every buffer needs an offset.
// CHECK: sched.program: arena is sized but a sched.buffer has no offset
sched.program @p() inputs 0 results [] arena 1024 {
  %t = sched.buffer : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: 3 inputs but only 2 buffers
sched.program @p(%a: memref<4xf32>, %b: memref<4xf32>) inputs 3 results [] arena -1 {
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: result buffer 2 is not one of the 2 arguments
sched.program @p(%a: memref<4xf32>, %b: memref<4xf32>) inputs 1 results [1, 2] arena -1 {
  sched.barrier grid
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program: arguments must be memrefs, got tensor<4xf32>
sched.program @p(%a: tensor<4xf32>) inputs 1 results [] arena -1 {
  sched.barrier grid
}

// -----
// CHECK: {{^//}} {{-----$}}

// Computes live in phases, not directly in the program.
// CHECK: sched.program may hold buffers, views, phases and barriers, not sched.compute
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.compute ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
}

// -----
// CHECK: {{^//}} {{-----$}}

// CHECK: sched.program may hold buffers, views, phases and barriers, not sched.commit
sched.program @p(%a: memref<4xf32>, %o: memref<4xf32>) inputs 1 results [1] arena -1 {
  sched.commit %a to %o : memref<4xf32>
}

// -----
// CHECK: {{^//}} {{-----$}}

// A tile op has no place in a sched.program.
// CHECK: sched.program may hold buffers, views, phases and barriers, not tile.sync
sched.program @p() inputs 0 results [] arena -1 {
  tile.sync grid
}

// -----
// CHECK: {{^//}} {{-----$}}

// Arena buffers belong to a program.
// CHECK: sched.buffer must be directly inside sched.program or tile.kernel
%t = sched.buffer : memref<4xf32>

// Every sched op prints in its custom form and parses back to the same IR,
// from the custom form and from the generic form.
// RUN: trainkernel-opt %s | filecheck %s
// RUN: trainkernel-opt %s | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt | filecheck %s
// RUN: trainkernel-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: trainkernel-opt %s > %t.custom
// RUN: trainkernel-opt %s --print-op-generic | trainkernel-opt > %t.generic
// RUN: diff %t.custom %t.generic

// CHECK-LABEL: sched.program @step(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %out: memref<2x4xf32>, %loss: memref<f32>) inputs 2 results [3, 2, 0] arena 1024 {
// CHECK-NEXT:    %t = sched.buffer offset 0 : memref<2x4xf32>
// CHECK-NEXT:    %v = sched.view %t : memref<2x4xf32> to memref<8xf32>
// CHECK-NEXT:    %s = sched.buffer offset 256 : memref<4x4xf32>
// CHECK-NEXT:    %n = sched.buffer offset 512 {tk.note = "tagged"} : memref<f32>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%t : memref<2x4xf32>) {
// CHECK-NEXT:      ^bb0(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>):
// CHECK-NEXT:        %p = tk.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:        tk.yield %p : tensor<2x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%v : memref<8xf32>) outs(%loss : memref<f32>) attributes {tk.note = "sum"} {
// CHECK-NEXT:      ^bb0(%c: tensor<8xf32>):
// CHECK-NEXT:        %r = tk.sum %c axes [0] : tensor<8xf32> -> tensor<f32>
// CHECK-NEXT:        tk.yield %r : tensor<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      sched.compute ins(%t, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%out, %s : memref<2x4xf32>, memref<4x4xf32>) {
// CHECK-NEXT:      ^bb0(%d: tensor<2x4xf32>, %e: tensor<4x4xf32>):
// CHECK-NEXT:        %q = tk.relu %d : tensor<2x4xf32>
// CHECK-NEXT:        %u = tk.neg %e : tensor<4x4xf32>
// CHECK-NEXT:        tk.yield %q, %u : tensor<2x4xf32>, tensor<4x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      sched.compute ins() outs(%n : memref<f32>) {
// CHECK-NEXT:        %z = tk.fill 0.0 : tensor<f32>
// CHECK-NEXT:        tk.yield %z : tensor<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    sched.barrier block {tk.note = "one block"}
// CHECK-NEXT:    sched.phase attributes {tk.note = "commit"} {
// CHECK-NEXT:      sched.commit %s to %w {tk.note = "late"} : memref<4x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// CHECK-LABEL: sched.program @unallocated(%ua: memref<3x5xbf16>) inputs 1 results [] arena -1 {
// CHECK-NEXT:    %ub = sched.buffer : memref<3x5xbf16>
// CHECK-NEXT:    %uc = sched.buffer : memref<15xi64>
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%ua : memref<3x5xbf16>) outs(%ub : memref<3x5xbf16>) {
// CHECK-NEXT:      ^bb0(%ux: tensor<3x5xbf16>):
// CHECK-NEXT:        tk.yield %ux : tensor<3x5xbf16>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-LABEL: sched.program @empty() inputs 0 results [] arena 0 attributes {tk.note = "x"} {
// CHECK-NEXT:    sched.barrier grid
// CHECK-NEXT:  }

// GENERIC: "sched.program"() <{sym_name = "step", num_inputs = #builtin.int<2>, result_buffers = array<i64: 3, 2, 0>, arena_bytes = #builtin.int<1024>}>
// GENERIC: "sched.buffer"() <{offset = #builtin.int<0>}> : () -> memref<2x4xf32>
// GENERIC: "sched.view"(%t) : (memref<2x4xf32>) -> memref<8xf32>
// GENERIC: "sched.phase"() ({
// GENERIC: "sched.compute"(%x, %w, %t) <{operandSegmentSizes = array<i32: 2, 1>}>
// GENERIC: "sched.barrier"() <{scope = "grid"}> : () -> ()
// GENERIC: "sched.barrier"() <{scope = "block"}> {tk.note = "one block"} : () -> ()
// GENERIC: "sched.commit"(%s, %w) {tk.note = "late"} : (memref<4x4xf32>, memref<4x4xf32>) -> ()

sched.program @step(%w: memref<4x4xf32>, %x: memref<2x4xf32>, %out: memref<2x4xf32>, %loss: memref<f32>) inputs 2 results [3, 2, 0] arena 1024 {
  %t = sched.buffer offset 0 : memref<2x4xf32>
  %v = sched.view %t : memref<2x4xf32> to memref<8xf32>
  %s = sched.buffer offset 256 : memref<4x4xf32>
  %n = sched.buffer offset 512 {tk.note = "tagged"} : memref<f32>
  sched.phase {
    sched.compute ins(%x, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%t : memref<2x4xf32>) {
    ^bb0(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>):
      %p = tk.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      tk.yield %p : tensor<2x4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%v : memref<8xf32>) outs(%loss : memref<f32>) attributes {tk.note = "sum"} {
    ^bb0(%c: tensor<8xf32>):
      %r = tk.sum %c axes [0] : tensor<8xf32> -> tensor<f32>
      tk.yield %r : tensor<f32>
    }
    sched.compute ins(%t, %w : memref<2x4xf32>, memref<4x4xf32>) outs(%out, %s : memref<2x4xf32>, memref<4x4xf32>) {
    ^bb0(%d: tensor<2x4xf32>, %e: tensor<4x4xf32>):
      %q = tk.relu %d : tensor<2x4xf32>
      %u = tk.neg %e : tensor<4x4xf32>
      tk.yield %q, %u : tensor<2x4xf32>, tensor<4x4xf32>
    }
    sched.compute ins() outs(%n : memref<f32>) {
      %z = tk.fill 0.0 : tensor<f32>
      tk.yield %z : tensor<f32>
    }
  }
  sched.barrier block {tk.note = "one block"}
  sched.phase attributes {tk.note = "commit"} {
    sched.commit %s to %w {tk.note = "late"} : memref<4x4xf32>
  }
}

sched.program @unallocated(%ua: memref<3x5xbf16>) inputs 1 results [] arena -1 {
  %ub = sched.buffer : memref<3x5xbf16>
  %uc = sched.buffer : memref<15xi64>
  sched.phase {
    sched.compute ins(%ua : memref<3x5xbf16>) outs(%ub : memref<3x5xbf16>) {
    ^bb0(%ux: tensor<3x5xbf16>):
      tk.yield %ux : tensor<3x5xbf16>
    }
  }
}

sched.program @empty() inputs 0 results [] arena 0 attributes {tk.note = "x"} {
  sched.barrier grid
}

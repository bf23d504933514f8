// sched-inplace-state KEEPS the staging and the commit whenever a direct write
// could overwrite an old value that is still to be read: another compute
// reading the parameter in the producer's phase or later, or the producer
// itself reading it at other indices (matmul operand, broadcast, reduction,
// view). Every program below comes back unchanged.
// RUN: trainkernel-opt %s -p sched-inplace-state | filecheck %s
// RUN: trainkernel-opt %s -p sched-inplace-state | filecheck %s --check-prefix=COUNT

// COUNT-COUNT-7: sched.commit
// COUNT-NOT:     sched.commit

// The fp32 tiny step: dX = dY @ W2^T reads the old W2 in the phase that
// produces the new one.
// CHECK-LABEL: sched.program @same_phase_reader(
// CHECK:         sched.compute ins(%dy, %w : memref<16x8xf32>, memref<64x8xf32>) outs(%dx : memref<16x64xf32>)
// CHECK:         sched.compute ins(%h, %dy, %w : memref<16x64xf32>, memref<16x8xf32>, memref<64x8xf32>) outs(%staged : memref<64x8xf32>)
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %staged to %w : memref<64x8xf32>
sched.program @same_phase_reader(%w: memref<64x8xf32>, %h: memref<16x64xf32>, %dy: memref<16x8xf32>, %dx: memref<16x64xf32>) inputs 3 results [3, 0] arena -1 {
  %staged = sched.buffer : memref<64x8xf32>
  sched.phase {
    sched.compute ins(%dy, %w : memref<16x8xf32>, memref<64x8xf32>) outs(%dx : memref<16x64xf32>) {
    ^bb0(%a: tensor<16x8xf32>, %b: tensor<64x8xf32>):
      %m = tk.matmul %a, %b transpose_b : (tensor<16x8xf32>, tensor<64x8xf32>) -> tensor<16x64xf32>
      tk.yield %m : tensor<16x64xf32>
    }
    sched.compute ins(%h, %dy, %w : memref<16x64xf32>, memref<16x8xf32>, memref<64x8xf32>) outs(%staged : memref<64x8xf32>) {
    ^bb0(%x: tensor<16x64xf32>, %y: tensor<16x8xf32>, %old: tensor<64x8xf32>):
      %g = tk.matmul %x, %y transpose_a : (tensor<16x64xf32>, tensor<16x8xf32>) -> tensor<64x8xf32>
      %new = tk.sub %old, %g : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
      tk.yield %new : tensor<64x8xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %staged to %w : memref<64x8xf32>
  }
}

// The old value is read in a LATER phase (a loss re-evaluated with the old
// weights after the update is known): the commit stays after that reader.
// CHECK-LABEL: sched.program @later_reader(
// CHECK:         sched.compute ins(%w2, %g2 : memref<4x4xf32>, memref<4x4xf32>) outs(%s2 : memref<4x4xf32>)
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.compute ins(%x2, %w2 : memref<2x4xf32>, memref<4x4xf32>) outs(%o2 : memref<2x4xf32>)
// CHECK:         sched.barrier grid
// CHECK-NEXT:    sched.phase {
// CHECK-NEXT:      sched.commit %s2 to %w2 : memref<4x4xf32>
sched.program @later_reader(%w2: memref<4x4xf32>, %g2: memref<4x4xf32>, %x2: memref<2x4xf32>, %o2: memref<2x4xf32>) inputs 3 results [3, 0] arena -1 {
  %s2 = sched.buffer : memref<4x4xf32>
  sched.phase {
    sched.compute ins(%w2, %g2 : memref<4x4xf32>, memref<4x4xf32>) outs(%s2 : memref<4x4xf32>) {
    ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
      %n = tk.sub %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      tk.yield %n : tensor<4x4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.compute ins(%x2, %w2 : memref<2x4xf32>, memref<4x4xf32>) outs(%o2 : memref<2x4xf32>) {
    ^bb0(%a: tensor<2x4xf32>, %b: tensor<4x4xf32>):
      %m = tk.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      tk.yield %m : tensor<2x4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %s2 to %w2 : memref<4x4xf32>
  }
}

// The producer reads the parameter as a matmul operand: W' = W - W @ G. Any
// output tile needs a whole row of W, which other blocks are overwriting.
// CHECK-LABEL: sched.program @matmul_operand(
// CHECK:         outs(%s3 : memref<4x4xf32>)
// CHECK:         sched.commit %s3 to %w3 : memref<4x4xf32>
sched.program @matmul_operand(%w3: memref<4x4xf32>, %g3: memref<4x4xf32>) inputs 2 results [0] arena -1 {
  %s3 = sched.buffer : memref<4x4xf32>
  sched.phase {
    sched.compute ins(%w3, %g3 : memref<4x4xf32>, memref<4x4xf32>) outs(%s3 : memref<4x4xf32>) {
    ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
      %m = tk.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %n = tk.sub %a, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      tk.yield %n : tensor<4x4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %s3 to %w3 : memref<4x4xf32>
  }
}

// The producer reads the parameter through a broadcast: out[i] = sum_j
// (b[j] + m[i, j]) reads every b[j].
// CHECK-LABEL: sched.program @broadcast(
// CHECK:         outs(%s4 : memref<4xf32>)
// CHECK:         sched.commit %s4 to %b4 : memref<4xf32>
sched.program @broadcast(%b4: memref<4xf32>, %m4: memref<4x4xf32>) inputs 2 results [0] arena -1 {
  %s4 = sched.buffer : memref<4xf32>
  sched.phase {
    sched.compute ins(%b4, %m4 : memref<4xf32>, memref<4x4xf32>) outs(%s4 : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>, %m: tensor<4x4xf32>):
      %x = tk.add %a, %m : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %r = tk.sum %x axes [1] : tensor<4x4xf32> -> tensor<4xf32>
      tk.yield %r : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %s4 to %b4 : memref<4xf32>
  }
}

// Through a tk.expand of the parameter.
// CHECK-LABEL: sched.program @expand(
// CHECK:         sched.commit %s5 to %b5 : memref<1x4xf32>
sched.program @expand(%b5: memref<1x4xf32>) inputs 1 results [0] arena -1 {
  %s5 = sched.buffer : memref<1x4xf32>
  sched.phase {
    sched.compute ins(%b5 : memref<1x4xf32>) outs(%s5 : memref<1x4xf32>) {
    ^bb0(%a: tensor<1x4xf32>):
      %e = tk.expand %a : tensor<1x4xf32> -> tensor<4x4xf32>
      %r = tk.sum %e axes [0] keepdim : tensor<4x4xf32> -> tensor<1x4xf32>
      tk.yield %r : tensor<1x4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %s5 to %b5 : memref<1x4xf32>
  }
}

// The producer reads the parameter through a sched.view (another shape:
// other indices).
// CHECK-LABEL: sched.program @view(
// CHECK:         sched.commit %s6 to %w6 : memref<2x2xf32>
sched.program @view(%w6: memref<2x2xf32>) inputs 1 results [0] arena -1 {
  %s6 = sched.buffer : memref<2x2xf32>
  %v6 = sched.view %w6 : memref<2x2xf32> to memref<4xf32>
  sched.phase {
    sched.compute ins(%v6 : memref<4xf32>) outs(%s6 : memref<2x2xf32>) {
    ^bb0(%a: tensor<4xf32>):
      %r = tk.reshape %a : tensor<4xf32> -> tensor<2x2xf32>
      %t = tk.transpose %r perm [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
      tk.yield %t : tensor<2x2xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %s6 to %w6 : memref<2x2xf32>
  }
}

// The staged value is a program argument (the new value is also returned as
// an output of its own): nothing to replace.
// CHECK-LABEL: sched.program @staged_in_output(
// CHECK:         sched.commit %out7 to %w7 : memref<4xf32>
sched.program @staged_in_output(%w7: memref<4xf32>, %out7: memref<4xf32>) inputs 1 results [1, 0] arena -1 {
  sched.phase {
    sched.compute ins(%w7 : memref<4xf32>) outs(%out7 : memref<4xf32>) {
    ^bb0(%a: tensor<4xf32>):
      %n = tk.neg %a : tensor<4xf32>
      tk.yield %n : tensor<4xf32>
    }
  }
  sched.barrier grid
  sched.phase {
    sched.commit %out7 to %w7 : memref<4xf32>
  }
}

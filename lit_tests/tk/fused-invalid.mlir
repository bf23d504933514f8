// tk.fused and tk.yield verifier errors.
// RUN: trainkernel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @arg_types(%a: tensor<4xf32>) {
  // CHECK: tk.fused: region argument types must equal the operand types
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%x: tensor<4xbf16>):
    tk.yield %x : tensor<4xbf16>
  }
  func.return
}

// -----

func.func @arg_count(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // CHECK: tk.fused: region argument types must equal the operand types
  %0 = tk.fused %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @yield_types(%a: tensor<4xf32>) {
  // CHECK: tk.fused: tk.yield types must equal the result types
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @yield_count(%a: tensor<4xf32>) {
  // CHECK: tk.fused: tk.yield types must equal the result types
  %0:2 = tk.fused %a : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

// Slices (and composites such as tk.mean or tk.addmm, decomposed before fusion)
// are not fusible.
func.func @not_fusible(%a: tensor<4x8xf32>) {
  // CHECK: tk.fused: tk.slice cannot be fused
  %0 = tk.fused %a : (tensor<4x8xf32>) -> tensor<4x4xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %s = tk.slice %x starts [0, 0] steps [1, 2] : tensor<4x8xf32> -> tensor<4x4xf32>
    tk.yield %s : tensor<4x4xf32>
  }
  func.return
}

// -----

func.func @mean_not_fusible(%a: tensor<4x8xf32>) {
  // CHECK: tk.fused: tk.mean cannot be fused
  %0 = tk.fused %a : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %s = tk.mean %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
    tk.yield %s : tensor<4xf32>
  }
  func.return
}

// -----

func.func @nested_fused(%a: tensor<4xf32>) {
  // CHECK: tk.fused: tk.fused cannot be fused
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %i = tk.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%y: tensor<4xf32>):
      tk.yield %y : tensor<4xf32>
    }
    tk.yield %i : tensor<4xf32>
  }
  func.return
}

// -----

// The body sees only its block arguments.
func.func @captures(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // CHECK: Operation using value defined out of its IsolatedFromAbove parent
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %s = tk.add %x, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tk.yield %s : tensor<4xf32>
  }
  func.return
}

// -----

func.func @no_yield(%a: tensor<4xf32>) {
  // CHECK: Operation tk.neg terminates block in single-block region but is not a terminator
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %n = tk.neg %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @yield_not_last(%a: tensor<4xf32>) {
  // CHECK: 'tk.yield' must be the last operation in its parent block
  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    tk.yield %x : tensor<4xf32>
    %n = tk.neg %x : tensor<4xf32>
  }
  func.return
}

// -----

func.func @two_blocks(%a: tensor<4xf32>) {
  // CHECK: Region 'body' at position 0 expected a single block, but got 2 blocks
  %0 = "tk.fused"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "tk.yield"(%x) : (tensor<4xf32>) -> ()
  ^bb1:
    "tk.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @no_block(%a: tensor<4xf32>) {
  // CHECK: Region 'body' at position 0 expected a single block, but got 0 blocks
  %0 = "tk.fused"(%a) ({
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// tk.yield terminates tk.fused (and the sched/tile regions that hold tk ops), nothing else.
func.func @yield_in_func(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tk.yield must terminate an op with a tk body (TkBody: tk.fused, sched.compute, tile ops), not func.func
  tk.yield %a : tensor<4xf32>
}

// -----

// CHECK: tk.yield must terminate an op with a tk body (TkBody: tk.fused, sched.compute, tile ops), not builtin.module
tk.yield

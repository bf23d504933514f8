// tk-fuse does not fold transposes into matmuls (canonicalize
// does, see passes/canonicalize/matmul-transpose.mlir, and the pipeline runs
// it first): a transpose feeding a matmul stays a view outside the group.
// RUN: trainkernel-opt %s -p tk-fuse | filecheck %s

// CHECK-LABEL: func.func @left_to_canonicalize(
// CHECK-NEXT:    %at = tk.transpose %a perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
// CHECK-NEXT:    %m = tk.fused %at, %b
// CHECK:         tk.matmul %{{.*}}, %{{.*}} : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
func.func @left_to_canonicalize(%a: tensor<16x32xf32>, %b: tensor<16x64xf32>) -> tensor<32x64xf32> {
  %at = tk.transpose %a perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %m = tk.matmul %at, %b : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
  func.return %m : tensor<32x64xf32>
}

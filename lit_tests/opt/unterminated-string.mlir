// An unterminated string literal is a parse error at once. xDSL 0.75's own rule
// for string literals backtracks exponentially on it (37 characters did not
// finish); trainkernel.dialects.lexer_fix gives the lexer a linear one.
// RUN: %PYTHON -c "import sys; sys.stdout.write('\"tensor1.01.0tensortensortk.addtensor')" > %t.short.mlir
// RUN: not trainkernel-opt %t.short.mlir 2>&1 | filecheck %s
// RUN: %PYTHON -c "import sys; sys.stdout.write('func.func @f() {\n  %%x = \"' + 'tensor1.0' * 20000 + '\n}')" > %t.long.mlir
// RUN: not trainkernel-opt %t.long.mlir 2>&1 | filecheck %s
// A terminated literal with every escape still lexes (the symbol name below).
// RUN: trainkernel-opt %s | filecheck %s --check-prefix=OK

// CHECK-NOT: Traceback
// CHECK: error: parse error
// CHECK: End of file reached before closing string literal.

// OK: func.func @"a\22b\\c\0Ad\09e"()
func.func @"a\"b\\c\nd\te"() {
  func.return
}

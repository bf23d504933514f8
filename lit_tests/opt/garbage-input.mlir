// Bytes that are not UTF-8, NUL bytes, and input nested too deeply: a diagnostic
// and a non-zero exit, never a traceback.
// RUN: %PYTHON -c "import sys, random; r = random.Random(7); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(512)))" > %t.random.mlir
// RUN: not trainkernel-opt %t.random.mlir 2>&1 | filecheck %s --check-prefix=BYTES
// RUN: %PYTHON -c "import sys; sys.stdout.buffer.write(b'func.func @f() {\x00}')" > %t.nul.mlir
// RUN: not trainkernel-opt %t.nul.mlir 2>&1 | filecheck %s --check-prefix=NUL
// RUN: %PYTHON -c "print('(' * 5000)" > %t.parens.mlir
// RUN: not trainkernel-opt %t.parens.mlir 2>&1 | filecheck %s --check-prefix=PARENS
// RUN: %PYTHON -c "n = 2000; print('func.func @f() {' + 'tk.fused : () -> () {' * n + 'tk.yield }' * n + 'func.return }')" > %t.deep.mlir
// RUN: not trainkernel-opt %t.deep.mlir 2>&1 | filecheck %s --check-prefix=DEEP

// BYTES-NOT: Traceback
// BYTES: error: input is not UTF-8 text
// BYTES-NOT: Traceback
// NUL-NOT: Traceback
// NUL: error: parse error
// NUL-NOT: Traceback
// PARENS-NOT: Traceback
// PARENS: error: parse error
// PARENS-NOT: Traceback
// DEEP-NOT: Traceback
// DEEP: error: input nests too deeply to process
// DEEP-NOT: Traceback

// -t cuda, grid_casts (target.grid_carried_casts) on online's schedule as a
// grid kernel (resident-exchange.mlir without tile-resident). Its phase 0
// casts the four fp32 parameters to bf16 every launch. With the switch those
// four maps run in a chain's first launch alone (tk_first), their temporaries
// move past the arena's other bytes (sched-allocate reused them once their
// last reader was done), and each update also stores the cast of the value it
// stores when another launch follows (tk_more). W2's cast is read by dh = dy @
// W2^T in the phase of W2's update: it has two copies, this launch's
// (tk_parity) and the next one's (_next), and its two products get a second
// pair of tensor maps (the odd copy's). y's cast is per batch: it stays, so
// phase 0's barrier stays. The launcher exports tk_launch_chain; tk_launch is
// a chain of one. A resident kernel prints as before (its step loop carries
// casts its own way).
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128}' -t 'cuda{grid_casts=on last_outputs=off prefetch_maps=off reduce_tails=off}' | filecheck %s --check-prefix=ON
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128}' -t 'cuda{grid_casts=off last_outputs=off prefetch_maps=off reduce_tails=off}' | filecheck %s --check-prefix=OFF
// RUN: trainkernel-opt %S/resident-exchange.mlir -p 'sched-to-tile{rows=128},tile-resident' -t 'cuda{grid_casts=on last_outputs=off prefetch_maps=off reduce_tails=off}' | filecheck %s --check-prefix=RES

// ON:       // kernel online_sgd_bf16: 11 buffers, arena 194048 bytes
// ON-NEXT:  struct TkParams { CUtensorMap maps[14]; void* buf[11]; char* arena; int first; int more; int parity; };
// ON:       const bool tk_first = p.first, tk_more = p.more, tk_parity = p.parity;
// ON:       __nv_bfloat16* [[W1:t[0-9]+]] = (__nv_bfloat16*)(p.arena + 111360);  // a carried cast, written by the updates too
// ON:       __nv_bfloat16* [[B1:t[0-9]+]] = (__nv_bfloat16*)(p.arena + 176896);  // a carried cast
// ON:       __nv_bfloat16* [[W2:t[0-9]+]] = (__nv_bfloat16*)(p.arena + (tk_parity ? 185600 : 177408));  // a carried cast: this launch's copy
// ON-NEXT:  __nv_bfloat16* [[W2]]_next = (__nv_bfloat16*)(p.arena + (tk_parity ? 177408 : 185600));  // the next launch's
// ON:       __nv_bfloat16* [[B2:t[0-9]+]] = (__nv_bfloat16*)(p.arena + 193792);  // a carried cast
// ON:       if (tk_first)  // a carried cast
// ON-NEXT:  { // tile.map: 32768 elements
// ON:       [[W1]][(i0)*256 + (i1)] = v1_bits;
// ON:       if (tk_first)  // a carried cast
// ON:       if (tk_first)  // a carried cast
// ON:       if (tk_first)  // a carried cast
// ON-NEXT:  { // tile.map: 16 elements
// ON-NOT:   if (tk_first)
// ON:       { // tile.map: 1024 elements
// ON:       tk::grid_sync();
// ON:       // ---- phase 1
// ON:       grid_gemm_units<__nv_bfloat16, TkShape, false, false, false>(&p.maps[0], &p.maps[1], tk_gp,
// ON:       grid_gemm_units<__nv_bfloat16, TkShape, false, false, false>(&p.maps[tk_parity ? 10 : 2], &p.maps[tk_parity ? 11 : 3], tk_gp,
// ON:       grid_gemm_units<__nv_bfloat16, TkShape, false, true, false>(&p.maps[tk_parity ? 12 : 4], &p.maps[tk_parity ? 13 : 5], tk_gp,
// ON:       if (tk_more) [[W2]]_next[(i)*16 + (j)] = tk::from_float<__nv_bfloat16>(v4);
// ON:       if (tk_more) [[B2]][(o0)] = tk::from_float<__nv_bfloat16>(v4);
// ON:       if (tk_more) [[W1]][(i)*256 + (j)] = tk::from_float<__nv_bfloat16>(v4);
// ON:       if (tk_more) [[B1]][(o0)] = tk::from_float<__nv_bfloat16>(v4);
// ON:       extern "C" long long tk_arena_bytes() { return 194048LL; }
// ON:       extern "C" int tk_launch_chain(void** buffers, void* arena, int grid, void* stream, int index, int count) {
// ON:       (&p.maps[0], &p.maps[1], buffers[4], 128, (char*)arena + 111360,
// ON:       (&p.maps[10], &p.maps[11], (char*)arena + 65536, 256, (char*)arena + 185600,
// ON:       p.first = index == 0;
// ON-NEXT:  p.more = index + 1 < count;
// ON-NEXT:  p.parity = index & 1;
// ON:       extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream) {
// ON-NEXT:    return tk_launch_chain(buffers, arena, grid, stream, 0, 1);

// OFF:      arena 111360 bytes
// OFF-NEXT: struct TkParams { CUtensorMap maps[10]; void* buf[11]; char* arena; };
// OFF-NOT:  tk_first
// OFF-NOT:  tk_more
// OFF-NOT:  tk_launch_chain

// RES-NOT:  tk_parity
// RES-NOT:  tk_launch_chain

// ex03_transpose -- your kernel. Read exercises/ex03_transpose/README.md first.
//
// y = x.T: x is row-major (rows, cols), y is row-major (cols, rows), so y[c * rows + r] must
// become x[r * cols + c]. solution.py launches ONE BLOCK OF 256 THREADS PER 32 x 32 TILE of x,
// on a 1-D grid: block b handles tile row b / tiles_c and tile column b % tiles_c (tiles_c =
// ceil(cols / 32)). There can be far more than 65535 tile rows, which is why the grid is 1-D.

#define TILE 32

extern "C" __global__ void transpose(const float* __restrict__ x, float* __restrict__ y, int rows, int cols)
{
    // TODO: move this block's tile of x into y.
    //   1. Correct first: each of the 256 threads copies 4 of the tile's 32 * 32 elements
    //      straight from x to y, skipping elements outside the matrix (tiles on the bottom and
    //      right edges are partial: rows and cols need not be multiples of 32).
    //   2. Then coalesced: a warp should read 32 consecutive floats of a row of x AND write 32
    //      consecutive floats of a row of y. Read the tile into a __shared__ float[TILE][...]
    //      array along rows of x, __syncthreads(), then write it out along rows of y, reading
    //      the shared array by columns.
    //   3. Then conflict-free: with a [TILE][TILE] array, reading a column hits one shared-
    //      memory bank 32 times. Pad each row by one float (or swizzle the column index).
}

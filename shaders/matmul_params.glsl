// Push constants shared by the matrix kernels: the bound range holds rows [rowOffset, rowOffset +
// nRows) of W, its first row starting at byte byteBase of the range.
layout(push_constant) uniform Params {
    uint cols;      // elements per row (and per x row)
    uint rowBytes;  // bytes per W row
    uint byteBase;  // offset of the first row inside the bound range
    uint rowOffset; // index of that row in the whole matrix (and in y rows)
    uint nRows;     // rows in this range
    uint totalRows; // y row stride
    uint n;         // tokens
} p;

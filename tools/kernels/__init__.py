"""This project's Triton kernels, one file per family (GEMM, convolution, attention, recurrent):
the compiler drafts copy their source into candidates; no job runs here."""
